"""The one way out: every write genbot makes to a platform is ``outbox.write(place, operation,
policy)``.

The :class:`Outbox` resolves the platform's surface and names the one platform call the
:mod:`operation <bot.outbox.operations>` asks for; a paced write's call is made by the
:class:`Pacer` once its windows have room (:meth:`Pacer.run`: the room held until the call
returns, and on a platform's "rate limited, retry after N s" the channel held for N s), and the
outbox retries or gives up as the :class:`~bot.outbox.policy.WritePolicy` says (see
:mod:`bot.outbox.policy`). Every platform call is counted in ``genbot_platform_writes_total`` by
platform and method (the operation's), and every :class:`~bot.kernel.RateLimited` a surface
raises — a 429 left after the adapter's own retries — in ``genbot_platform_rate_limited_total``,
where the call is made. Features decide *what* to write and when it is worth writing; the
outbox decides *when it may*."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import TypeVar, cast

from bot.kernel import (
    Attachment,
    CommandNames,
    DeletesMessages,
    EditsPressed,
    Event,
    FindsKeyedPosts,
    ForgetsUsers,
    LinksMessages,
    MessageRef,
    NamesCommands,
    Place,
    PlatformProfile,
    PublishesHome,
    RateLimited,
    Reposts,
    SendsFilesPrivately,
    SendsPrivately,
    ShowsActivity,
    StreamsNatively,
    Surface,
    SurfaceError,
    SurfaceRegistry,
    metrics,
)
from bot.outbox.operations import (
    Activity,
    Delete,
    Edit,
    EditPressed,
    Notice,
    OpenForm,
    Operation,
    Post,
    Private,
    PrivateFile,
    PublishHome,
    Repost,
    StartThread,
    StreamAppend,
    StreamStart,
    StreamStop,
    Typing,
)
from bot.outbox.pacing import Pacer, PacingTimeout
from bot.outbox.policy import Stream, WritePolicy, WriteRateLimited, WriteSkipped
from bot.outbox.windows import Grant

T = TypeVar("T")

log = logging.getLogger(__name__)


class Outbox:
    """Writes on the surfaces of ``surfaces`` (held from the start: the registry is not
    consulted per write), paced by ``pacer`` (one per process: every write of the process
    shares its windows). It is also where features read what a platform allows and can do
    (:meth:`profile`, :meth:`can`) and what it shows (:meth:`posted`, :meth:`link`): only the
    outbox holds surfaces."""

    def __init__(self, surfaces: SurfaceRegistry, pacer: Pacer | None = None) -> None:
        self._surfaces = {name: surfaces.get(name) for name in surfaces.platforms()}
        self.pacer = pacer or Pacer()

    def platforms(self) -> tuple[str, ...]:
        """The platforms with an attached surface."""
        return tuple(self._surfaces)

    def __contains__(self, platform: object) -> bool:
        return platform in self._surfaces

    def profile(self, platform: str) -> PlatformProfile:
        """What ``platform`` allows (text length, buttons, forms, windows); ``KeyError`` when
        no surface for it is attached."""
        return self._surfaces[platform].profile

    def can(self, platform: str, capability: type) -> bool:
        """Whether ``platform``'s surface offers ``capability`` (one of the kernel's optional
        surface protocols, such as :class:`~bot.kernel.DeletesMessages`); False when no
        surface for it is attached."""
        surface = self._surfaces.get(platform)
        return surface is not None and isinstance(surface, capability)

    def command_names(self, place: Place) -> CommandNames:
        """How a text read in ``place`` names genbot's commands (see
        :class:`~bot.kernel.NamesCommands`); the catalogue's names where its platform has no
        way of its own."""
        surface = self._surfaces.get(place.platform)
        if not isinstance(surface, NamesCommands):
            return CommandNames()
        return surface.command_names(place)

    async def posted(self, place: Place, key: str) -> MessageRef | None:
        """The message shown in ``place`` with ``key``, where its platform can tell (see
        :class:`~bot.kernel.FindsKeyedPosts`); None otherwise."""
        surface = self._surfaces.get(place.platform)
        if not isinstance(surface, FindsKeyedPosts):
            return None
        return await surface.posted(place, key)

    async def link(self, ref: MessageRef) -> str | None:
        """An address opening the message ``ref``, where its platform gives one (see
        :class:`~bot.kernel.LinksMessages`); None otherwise."""
        surface = self._surfaces.get(ref.place.platform)
        if not isinstance(surface, LinksMessages):
            return None
        return await surface.link(ref)

    async def kept_about(self, platform: str, user_id: str) -> Mapping[str, int]:
        """What ``platform``'s surface keeps about ``user_id`` beyond genbot's records, by
        kind (see :class:`~bot.kernel.ForgetsUsers`; ``{}`` where it keeps nothing)."""
        surface = self._surfaces.get(platform)
        return await surface.kept_about(user_id) if isinstance(surface, ForgetsUsers) else {}

    async def forget_user(self, platform: str, user_id: str) -> Mapping[str, int]:
        """Delete what ``platform``'s surface keeps about ``user_id``; how many of each kind
        (a deletion, not a write to the platform: not paced)."""
        surface = self._surfaces.get(platform)
        return await surface.forget_user(user_id) if isinstance(surface, ForgetsUsers) else {}

    async def tell_forgotten(self, origin: Event, text: str) -> bool:
        """Tell ``origin``'s user ``text`` privately without the platform's surface keeping
        it, where it keeps what it shows (:class:`~bot.kernel.ForgetsUsers`); False elsewhere
        (nothing is kept there: answer as usual)."""
        surface = self._surfaces.get(origin.place.platform)
        if not isinstance(surface, ForgetsUsers):
            return False
        await surface.tell_forgotten(origin, text)
        return True

    async def download(self, place: Place, attachment: Attachment) -> bytes:
        """The bytes of a user's ``attachment`` posted in ``place`` (its platform's
        credentials included); a read, not paced."""
        return await self._surfaces[place.platform].download(attachment)

    async def write(
        self,
        place: Place,
        operation: Operation[T],
        policy: WritePolicy,
        *,
        wait: float | None = None,
        last_served: float = -math.inf,
    ) -> T:
        """Make the write ``operation`` in ``place`` (the place whose windows it counts
        against: for an edit, the edited message's) as ``policy`` says. ``wait`` replaces a
        paced policy's wait for room; ``last_served`` (the pacer's clock) orders paced writes
        that are not urgent, least recently served first. Surface errors other than rate limits
        propagate (``BEST_EFFORT``: logged). A stream's writes are made in a :meth:`room`."""
        surface = self._surfaces[place.platform]
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
        """The write made by the pacer when there is room (see :meth:`Pacer.run`), as
        ``policy`` says when there is none in time or the platform refuses it."""
        call = self._platform_call(surface, place, operation)
        if call is None:
            return cast(T, None)
        rules = policy.value
        deadline = self.pacer.clock.monotonic() + (rules.wait if wait is None else wait)
        limited: RateLimited | None = None
        for _ in range(rules.attempts):
            try:
                made = await self.pacer.run(
                    place,
                    surface.profile,
                    call,
                    operation.method,
                    urgent=rules.urgent,
                    deadline=deadline,
                    last_served=last_served,
                    late=limited is None and policy is not WritePolicy.SKIP_IF_BUSY,
                    spare=rules.spare,
                )
                return cast(T, made)
            except PacingTimeout:
                if policy is WritePolicy.SKIP_IF_BUSY:
                    raise WriteSkipped(f"no room to write in {place} in time") from None
                break
            except RateLimited as refused:
                limited = refused
                if policy is WritePolicy.SKIP_IF_BUSY:
                    raise WriteSkipped(f"rate limited in {place}") from refused
        assert limited is not None
        if policy is WritePolicy.RAISE:
            raise WriteRateLimited(limited.retry_after)
        return await self._call(surface, place, operation)

    async def room(self, place: Place, policy: Stream) -> Room:
        """Wait for room for one write of a stream in ``place`` (ranked by the stream's
        demand); :class:`WriteSkipped` when ``policy.until`` is set first. The caller names
        the write only now, so it carries the newest text, and makes it with
        :meth:`Room.write` (which gives the room back when nothing is wanted any more)."""
        surface = self._surfaces[place.platform]
        return Room(self, surface, place, await self._stream_room(surface, place, policy))

    async def _stream_room(self, surface: Surface, place: Place, policy: Stream) -> Grant:
        """Room for one stream write, open until it returns (counted until then where the
        platform enforces its windows); :class:`WriteSkipped` when ``policy.until`` is set
        first."""
        acquire = self.pacer.acquire(
            place,
            surface.profile,
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
                self.pacer.give_back(granted.result())
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

    @staticmethod
    async def _call(surface: Surface, place: Place, operation: Operation[T]) -> T:
        """The one platform call ``operation`` names, made at once and counted by its method
        (an activity ended where the platform shows none makes no call)."""
        call = Outbox._platform_call(surface, place, operation)
        if call is None:
            return cast(T, None)
        metrics.PLATFORM_WRITES.labels(surface.platform, operation.method).inc()
        try:
            return cast(T, await call())
        except RateLimited:
            metrics.PLATFORM_RATE_LIMITED.labels(surface.platform, operation.method).inc()
            raise

    @staticmethod
    def _platform_call(
        surface: Surface, place: Place, operation: Operation[T]
    ) -> Callable[[], Awaitable[object]] | None:
        """The call ``operation`` names, not yet made (None: an activity the platform does not
        show); ``TypeError`` when ``surface`` cannot make it."""
        match operation:
            case Post(message, origin):
                return partial(surface.send, place, message, origin=origin)
            case Repost(original, message) if isinstance(surface, Reposts):
                return partial(surface.repost, original, place, message)
            case Edit(ref, message):
                return partial(surface.edit, ref, message)
            case EditPressed(press, message) if isinstance(surface, EditsPressed):
                return partial(surface.edit_pressed, press, message)
            case Delete(ref) if isinstance(surface, DeletesMessages):
                return partial(surface.delete, ref)
            case Notice(origin, text):
                return partial(surface.send_ephemeral, origin, text)
            case Private(origin, message) if isinstance(surface, SendsPrivately):
                return partial(surface.send_private, origin, message)
            case PrivateFile(origin, text, filename, data) if isinstance(
                surface, SendsFilesPrivately
            ):
                return partial(surface.send_file_privately, origin, text, filename, data)
            case OpenForm(origin, modal):
                return partial(surface.open_modal, origin, modal)
            case StartThread(ref, name):
                return partial(surface.start_thread, ref, name)
            case Activity(kind, origin, ended) if isinstance(surface, ShowsActivity):
                if ended:
                    return partial(surface.end_activity, place, kind, origin=origin)
                return partial(surface.show_activity, place, kind, origin=origin)
            case Activity(kind, _, ended):
                return partial(surface.typing, place) if kind == "thinking" and not ended else None
            case PublishHome(event, view) if isinstance(surface, PublishesHome):
                return partial(surface.publish_home, event, view)
            case Typing():
                return partial(surface.typing, place)
            case StreamStart(text, origin, recipient) if isinstance(surface, StreamsNatively):
                return partial(
                    surface.start_stream, place, text, origin=origin, recipient=recipient
                )
            case StreamAppend(stream, text):
                return partial(stream.append, text)
            case StreamStop(stream, text, buttons):
                return partial(stream.stop, text, buttons)
        raise TypeError(f"{surface.platform} cannot write {type(operation).__name__}")


class Room:
    """Room for one stream write in ``place``, open in the pacer's windows until :meth:`write`
    returns (see :meth:`Outbox.room`)."""

    def __init__(self, outbox: Outbox, surface: Surface, place: Place, grant: Grant) -> None:
        self._outbox = outbox
        self._surface = surface
        self._place = place
        self._grant = grant

    async def write(self, operation: Operation[T] | None) -> T:
        """Make ``operation`` (counted, like every write); ``None``: nothing is wanted any
        more, the room is given back and :class:`WriteSkipped` raised. A rate limit holds the
        channel for its retry-after and propagates (the stream retries with newer text)."""
        if operation is None:
            self.give_back()
            raise WriteSkipped("the write is no longer wanted")
        try:
            return await self._outbox._call(self._surface, self._place, operation)
        except RateLimited as refused:
            self._outbox.pacer.penalize(self._place, self._surface.profile, refused.retry_after)
            raise
        finally:
            self._outbox.pacer.finish(self._grant)

    def give_back(self) -> None:
        """Give the room back unused."""
        self._outbox.pacer.give_back(self._grant)
