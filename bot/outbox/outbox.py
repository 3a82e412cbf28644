"""The one way out: every write genbot makes to a platform is ``outbox.write(place, operation,
policy)``.

The :class:`Outbox` resolves the platform's surface, waits for room in the :class:`Pacer`'s
windows as the :class:`~bot.outbox.policy.WritePolicy` says (see :mod:`bot.outbox.policy`),
makes the one platform call the :mod:`operation <bot.outbox.operations>` names, holds the write
in the windows until that call returns, and on a platform's "rate limited, retry after N s"
holds the channel for N s and retries or gives up as the policy says. Features decide *what*
to write and when it is worth writing; the outbox decides *when it may*.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable
from typing import TypeVar, cast, overload

from bot.kernel import (
    DeletesMessages,
    Place,
    PublishesHome,
    RateLimited,
    Reposts,
    SendsPrivately,
    ShowsStatus,
    StreamsNatively,
    Surface,
    SurfaceError,
    SurfaceRegistry,
)
from bot.outbox.operations import (
    Activity,
    Delete,
    Edit,
    Notice,
    OpenForm,
    Operation,
    Post,
    Private,
    PublishHome,
    Repost,
    StartThread,
    StreamAppend,
    StreamStart,
    StreamStop,
    Typing,
)
from bot.outbox.pacing import Pacer, PacingTimeout
from bot.outbox.policy import PolicyRules, Stream, WritePolicy, WriteRateLimited, WriteSkipped
from bot.outbox.windows import Grant

T = TypeVar("T")

Compose = Callable[[], Operation[T] | None]
"""A write named only once there is room for it (so it carries the newest text), or ``None``
when it is no longer wanted."""

log = logging.getLogger(__name__)


class Outbox:
    """Writes on the surfaces of ``surfaces``, paced by ``pacer`` (one per process: every
    write of the process shares its windows)."""

    def __init__(self, surfaces: SurfaceRegistry, pacer: Pacer | None = None) -> None:
        self.surfaces = surfaces
        self.pacer = pacer or Pacer()

    @overload
    async def write(
        self,
        place: Place,
        operation: Operation[T],
        policy: WritePolicy,
        *,
        wait: float | None = None,
        last_served: float = -math.inf,
    ) -> T: ...

    @overload
    async def write(self, place: Place, operation: Compose[T], policy: Stream) -> T: ...

    async def write(
        self,
        place: Place,
        operation: Operation[T] | Compose[T],
        policy: WritePolicy | Stream,
        *,
        wait: float | None = None,
        last_served: float = -math.inf,
    ) -> T:
        """Make the write ``operation`` in ``place`` (the place whose windows it counts
        against: for an edit, the edited message's) as ``policy`` says. ``wait`` replaces a
        paced policy's wait for room; ``last_served`` (the pacer's clock) orders paced writes
        that are not urgent, least recently served first. A :class:`Stream` write is composed
        once there is room (see :data:`Compose`). Surface errors other than rate limits
        propagate (``BEST_EFFORT``: logged)."""
        surface = self.surfaces.get(place.platform)
        if isinstance(policy, Stream):
            assert not isinstance(operation, Operation)
            return await self._streamed(surface, place, operation, policy)
        assert isinstance(operation, Operation)
        if policy is WritePolicy.NOW:
            return await self._call(surface, place, operation)
        if policy is WritePolicy.BEST_EFFORT:
            if not isinstance(operation, Activity | Typing):
                raise TypeError(f"{type(operation).__name__} is never written on a best effort")
            try:
                await self._call(surface, place, operation)
            except (RateLimited, SurfaceError) as error:
                log.info("could not show %s in %s: %s", operation, place, error)
            return cast(T, None)
        return await self._paced(surface, place, operation, policy, wait, last_served)

    async def _paced(
        self,
        surface: Surface,
        place: Place,
        operation: Operation[T],
        policy: WritePolicy,
        wait: float | None,
        last_served: float,
    ) -> T:
        rules = policy.value
        deadline = self.pacer.clock.monotonic() + (rules.wait if wait is None else wait)
        limited: RateLimited | None = None
        for _ in range(rules.attempts):
            grant = await self._room(surface, place, deadline, rules, last_served)
            if grant is None:
                if policy is WritePolicy.SKIP_IF_BUSY:
                    raise WriteSkipped(f"no room to write in {place} in time")
                if limited is not None:
                    break
            try:
                return await self._call(surface, place, operation)
            except RateLimited as refused:
                limited = refused
                self.pacer.penalize(place, surface.limits, refused.retry_after)
                if policy is WritePolicy.SKIP_IF_BUSY:
                    raise WriteSkipped(f"rate limited in {place}") from refused
            finally:
                if grant is not None:
                    grant.finish()
        assert limited is not None
        if policy is WritePolicy.RAISE:
            raise WriteRateLimited(limited.retry_after)
        return await self._call(surface, place, operation)

    async def _streamed(
        self, surface: Surface, place: Place, compose: Compose[T], policy: Stream
    ) -> T:
        grant = await self._stream_room(surface, place, policy)
        try:
            operation = compose()
            if operation is None:
                grant.cancel()
                raise WriteSkipped("the write is no longer wanted")
            try:
                return await self._call(surface, place, operation)
            except RateLimited as refused:
                self.pacer.penalize(place, surface.limits, refused.retry_after)
                raise
        finally:
            grant.finish()

    async def _stream_room(self, surface: Surface, place: Place, policy: Stream) -> Grant:
        """Room for one stream write, held until it returns; :class:`WriteSkipped` when
        ``policy.until`` is set first."""
        acquire = self.pacer.acquire(
            place,
            surface.limits,
            urgent=False,
            last_served=policy.last_served,
            deadline=policy.deadline,
            demand=policy.demand,
            hold=True,
            kind=policy.kind,
        )
        if policy.until is None:
            return await acquire
        granted = asyncio.ensure_future(acquire)
        until = asyncio.ensure_future(policy.until.wait())
        try:
            await asyncio.wait((granted, until), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            if granted.done() and not granted.cancelled() and granted.exception() is None:
                granted.result().cancel()
            raise
        finally:
            for task in (granted, until):
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
        if granted.cancelled():
            raise WriteSkipped("the stream ended while its write waited")
        return granted.result()

    async def _room(
        self,
        surface: Surface,
        place: Place,
        deadline: float,
        rules: PolicyRules,
        last_served: float,
    ) -> Grant | None:
        """Wait (bounded by ``deadline``) for room, held until the write returns; None when
        there was none in time."""
        remaining = deadline - self.pacer.clock.monotonic()
        if remaining <= 0:
            return None
        try:
            async with asyncio.timeout(remaining):
                return await self.pacer.acquire(
                    place,
                    surface.limits,
                    urgent=rules.urgent,
                    deadline=deadline,
                    hold=True,
                    last_served=last_served,
                )
        except (PacingTimeout, TimeoutError):
            return None

    @staticmethod
    async def _call(surface: Surface, place: Place, operation: Operation[T]) -> T:
        """The one platform call ``operation`` names."""
        answer: object = None
        match operation:
            case Post(message, origin):
                answer = await surface.send(place, message, origin=origin)
            case Repost(original, message) if isinstance(surface, Reposts):
                answer = await surface.repost(original, place, message)
            case Edit(ref, message):
                await surface.edit(ref, message)
            case Delete(ref) if isinstance(surface, DeletesMessages):
                await surface.delete(ref)
            case Notice(origin, text):
                await surface.send_ephemeral(origin, text)
            case Private(origin, message) if isinstance(surface, SendsPrivately):
                await surface.send_private(origin, message)
            case OpenForm(origin, modal):
                await surface.open_modal(origin, modal)
            case StartThread(ref, name):
                answer = await surface.start_thread(ref, name)
            case Activity(status, origin, ended) if isinstance(surface, ShowsStatus):
                if ended:
                    await surface.end_status(place, status, origin=origin)
                else:
                    await surface.show_status(place, status, origin=origin)
            case Activity(status, _, ended):
                if status == "thinking" and not ended:
                    await surface.typing(place)
            case PublishHome(event, view) if isinstance(surface, PublishesHome):
                await surface.publish_home(event, view)
            case Typing():
                await surface.typing(place)
            case StreamStart(text, origin, recipient) if isinstance(surface, StreamsNatively):
                answer = await surface.start_stream(place, text, origin=origin, recipient=recipient)
            case StreamAppend(stream, text):
                await stream.append(text)
            case StreamStop(stream, text):
                await stream.stop(text)
            case _:
                raise TypeError(f"{surface.platform} cannot write {type(operation).__name__}")
        return cast(T, answer)
