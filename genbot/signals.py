"""Stopping a serving genbot process cleanly.

:class:`StopSignals` handles SIGINT and SIGTERM from the first moment of a serving command to the
end of its teardown: a signal during startup cancels the startup (see
:meth:`StopSignals.interrupting`), a signal while serving ends :meth:`StopSignals.wait`, and a
further signal while stopping is logged and ignored (every teardown step is bounded). Something
genbot cannot live without (the Discord gateway connection) stops the process the same way with
:meth:`StopSignals.fail`, which also makes the command exit non-zero with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger("genbot")

T = TypeVar("T")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
CANCEL_GRACE_SECONDS = 10.0
"""How long a cancelled startup may take to unwind before genbot stops without it."""


class StopRequested(Exception):
    """A stop was requested before startup finished; what had started is being stopped."""


class StopSignals:
    """SIGINT/SIGTERM and fatal errors of one serving process, as one stop request.

    ``signal`` is the signal that asked for the stop, ``fatal`` the reason given to
    :meth:`fail`, ``ignored`` how many signals arrived while already stopping.
    """

    def __init__(self) -> None:
        self._requested = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._installed: list[signal.Signals] = []
        self.signal: signal.Signals | None = None
        self.fatal: str | None = None
        self.ignored = 0

    @property
    def requested(self) -> bool:
        """Whether a stop was requested (by a signal or :meth:`fail`)."""
        return self._requested.is_set()

    def install(self) -> None:
        """Handle SIGINT and SIGTERM on the running loop (only the main thread can)."""
        self._loop = asyncio.get_running_loop()
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in STOP_SIGNALS:
            self._loop.add_signal_handler(signum, self._on_signal, signum)
            self._installed.append(signum)

    def uninstall(self) -> None:
        """Give SIGINT and SIGTERM back to their default handlers."""
        while self._installed:
            signum = self._installed.pop()
            if self._loop is not None:
                self._loop.remove_signal_handler(signum)

    def fail(self, reason: str) -> None:
        """Stop because something genbot needs has died; the command then exits non-zero with
        ``reason`` (one line). Safe to call from any thread."""
        if self._loop is None:
            raise RuntimeError("StopSignals.fail before install()")
        self._loop.call_soon_threadsafe(self._fail, reason)

    async def wait(self) -> None:
        """Return once a stop is requested."""
        await self._requested.wait()

    async def interrupting(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` (a startup) unless a stop is requested first; then cancel it, let it
        unwind (up to ``CANCEL_GRACE_SECONDS``) and raise :class:`StopRequested`."""
        if self.requested:
            work.close()
            raise StopRequested
        task = asyncio.ensure_future(work)
        stopping = asyncio.ensure_future(self._requested.wait())
        try:
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.wait({task}, timeout=CANCEL_GRACE_SECONDS)
            raise
        finally:
            stopping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stopping
        if task.done():
            return task.result()
        task.cancel()
        await asyncio.wait({task}, timeout=CANCEL_GRACE_SECONDS)
        if not task.done():
            log.warning("startup did not unwind within %.0f seconds", CANCEL_GRACE_SECONDS)
        elif not task.cancelled() and task.exception() is not None:
            log.warning("startup failed while stopping: %s", task.exception())
        raise StopRequested

    def _on_signal(self, signum: signal.Signals) -> None:
        if self.requested:
            self.ignored += 1
            log.warning("%s received while stopping: ignored, genbot is stopping", signum.name)
            return
        log.info("%s received: stopping", signum.name)
        self.signal = signum
        self._requested.set()

    def _fail(self, reason: str) -> None:
        if self.requested:
            log.warning("while stopping: %s", reason)
            return
        log.error("stopping: %s", reason)
        self.fatal = reason
        self._requested.set()


async def serve_until_stopped(work: Callable[[StopSignals], Awaitable[None]]) -> StopSignals:
    """Install the stop signals, run ``work(stop)`` (which serves until ``stop`` says so and
    tears down), and return ``stop`` (its ``fatal`` tells whether the process must fail)."""
    stop = StopSignals()
    stop.install()
    try:
        with contextlib.suppress(StopRequested):
            await work(stop)
    finally:
        stop.uninstall()
    return stop
