"""One way for every adapter to run the core on what it receives, and to stop taking more.

An adapter translates a platform's traffic into an :class:`bot.kernel.events.InboundEvent` and hands
it to :meth:`AdapterRunner.submit`, which runs ``handler.handle(event)`` in a task of its own (so
the platform's acknowledgement deadline never depends on the core). The runner is the adapters' only
error boundary: a handler that raises, or outlives ``handler_timeout``, is logged and the user gets
the core's last-resort text (:mod:`bot.kernel.errors` owns the texts).

Intake opens when the adapter starts (:meth:`AdapterRunner.serve` names the handler) and closes
in two steps. :meth:`AdapterRunner.stop_intake` makes every later event get the core's
"restarting" answer instead of being handled (a plain message is answered only when it was
addressed to genbot: a DM or a mention, so busy threads are not spammed). :meth:`drain` then lets
what is running finish within a deadline and cancels what is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextlib import AbstractAsyncContextManager

from bot.kernel import (
    RESTARTING_TEXT,
    TOO_SLOW_TEXT,
    EventHandler,
    InboundEvent,
    Surface,
    UserMessage,
    metrics,
    unexpected_error_text,
)

log = logging.getLogger(__name__)

ErrorReporter = Callable[[str, BaseException], None]
"""Told ``(where, error)`` about every exception a handler raised."""
Around = Callable[[InboundEvent], AbstractAsyncContextManager[object]]
"""What an adapter does around handling one event (acknowledge it, show "working", settle it);
it is entered for refused events too."""
SerialKey = Callable[[InboundEvent], Hashable | None]
"""Events with the same key are handled one at a time, in arrival order (``None``: no order)."""

CANCEL_GRACE_SECONDS = 5.0
"""How long cancelled handlers may take to unwind at the end of a drain."""


def log_error(where: str, error: BaseException) -> None:
    """The default :data:`ErrorReporter`: an ERROR line with the traceback."""
    log.error("%s failed", where, exc_info=error)


def answers_refusal(event: InboundEvent) -> bool:
    """Whether ``event`` gets the "restarting" answer while genbot stops: interactions always,
    a plain message only when addressed to genbot."""
    if isinstance(event, UserMessage):
        return event.mentions_bot or event.place.is_dm
    return True


@contextlib.asynccontextmanager
async def _nothing_around(event: InboundEvent) -> AsyncIterator[None]:
    yield


class AdapterRunner:
    """Runs the handler given to :meth:`serve` on one adapter's events; answers on ``surface``
    when handling fails.

    ``platform`` names the adapter in logs. ``handler_timeout`` bounds each event's handling
    (``None``: unbounded). ``around`` and ``serial_key`` are the adapter's defaults for
    :meth:`submit`. Until :meth:`serve`, events get the "restarting" answer.
    """

    def __init__(
        self,
        surface: Surface,
        *,
        platform: str,
        handler_timeout: float | None = None,
        around: Around = _nothing_around,
        serial_key: SerialKey | None = None,
        report_error: ErrorReporter = log_error,
    ) -> None:
        self._handler: EventHandler | None = None
        self.surface = surface
        self.platform = platform
        self.handler_timeout = handler_timeout
        self.around = around
        self.serial_key = serial_key
        self.report_error = report_error
        self._accepting = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._locks: dict[Hashable, asyncio.Lock] = {}
        self._waiting: dict[Hashable, int] = {}

    def serve(self, handler: EventHandler) -> None:
        """Handle the events submitted from now on with ``handler`` (the core)."""
        self._handler = handler
        self._accepting = True

    @property
    def handler(self) -> EventHandler:
        """The handler events go to; ``RuntimeError`` before :meth:`serve`."""
        if self._handler is None:
            raise RuntimeError(f"the {self.platform} adapter is not started")
        return self._handler

    @property
    def accepting(self) -> bool:
        """Whether new events are handled (``False`` once :meth:`stop_intake` was called)."""
        return self._accepting

    @property
    def running(self) -> int:
        """How many events are being handled or answered."""
        return sum(not task.done() for task in self._tasks)

    def submit(
        self,
        event: InboundEvent | Awaitable[InboundEvent | None],
        *,
        around: Around | None = None,
    ) -> bool:
        """Handle ``event`` in the background (an awaitable is first awaited for the event; it
        may give ``None`` when there is nothing to handle). Returns ``False`` when intake is
        stopped: the event is answered with the "restarting" text instead."""
        accepted = self._accepting
        work = self._handle if accepted else self._refuse
        task = asyncio.create_task(
            work(event, around or self.around), name=f"genbot-{self.platform}-event"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return accepted

    def stop_intake(self) -> None:
        """Answer every event submitted from now on with the "restarting" text."""
        if self._accepting:
            self._accepting = False
            log.info("%s: taking no new events (%d running)", self.platform, self.running)

    async def drain(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for the running events (and any submitted meanwhile),
        then cancel the rest; returns how many were cancelled."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while pending := {task for task in self._tasks if not task.done()}:
            left = deadline - loop.time()
            if left <= 0:
                break
            await asyncio.wait(pending, timeout=left)
        late = {task for task in self._tasks if not task.done()}
        if late:
            log.warning(
                "%s: %d event(s) still running after %.0f s: cancelled",
                self.platform,
                len(late),
                timeout,
            )
            await self.cancel()
        return len(late)

    async def cancel(self) -> None:
        """Cancel every running event (bounded wait for them to unwind)."""
        tasks = [task for task in self._tasks if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=CANCEL_GRACE_SECONDS)

    async def _handle(
        self, event: InboundEvent | Awaitable[InboundEvent | None], around: Around
    ) -> None:
        built = await self._built(event)
        if built is None:
            return
        metrics.bind_log_fields(platform=self.platform, user_id=built.user.id)
        key = self.serial_key(built) if self.serial_key is not None else None
        async with self._serialised(key), around(built):
            await self._run(built)

    async def _run(self, event: InboundEvent) -> None:
        deadline = asyncio.timeout(self.handler_timeout)
        outcome = "failed"
        try:
            async with deadline:
                await self.handler.handle(event)
            outcome = "handled"
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        except Exception as error:
            if isinstance(error, TimeoutError) and deadline.expired():
                outcome = "timed_out"
                log.error(
                    "%s: handling %s took over %.0f s: given up",
                    self.platform,
                    type(event).__name__,
                    self.handler_timeout or 0,
                )
                await self._answer(event, TOO_SLOW_TEXT)
                return
            reference = secrets.token_hex(4)
            self.report_error(f"handling {type(event).__name__} (ref {reference})", error)
            await self._answer(event, unexpected_error_text(reference))
        finally:
            metrics.event_ended(self.platform, type(event).__name__, outcome)
            log.debug("%s: %s %s", self.platform, type(event).__name__, outcome)

    async def _refuse(
        self, event: InboundEvent | Awaitable[InboundEvent | None], around: Around
    ) -> None:
        built = await self._built(event)
        if built is None:
            return
        metrics.event_ended(self.platform, type(built).__name__, "refused")
        async with around(built):
            if answers_refusal(built):
                await self._answer(built, RESTARTING_TEXT)

    async def _built(
        self, event: InboundEvent | Awaitable[InboundEvent | None]
    ) -> InboundEvent | None:
        if not isinstance(event, Awaitable):
            return event
        try:
            return await event
        except Exception as error:
            self.report_error(f"reading a {self.platform} event", error)
            return None

    @contextlib.asynccontextmanager
    async def _serialised(self, key: Hashable | None) -> AsyncIterator[None]:
        if key is None:
            yield
            return
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._waiting[key] = self._waiting.get(key, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._waiting[key] -= 1
            if not self._waiting[key]:
                del self._waiting[key], self._locks[key]

    async def _answer(self, event: InboundEvent, text: str) -> None:
        try:
            await self.surface.send_ephemeral(event, text)
        except Exception as error:
            log.warning("%s: could not tell the user %r: %s", self.platform, text, error)
