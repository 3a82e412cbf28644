"""The web playground adapter: serves the playground (:mod:`adapters.web.playground`) to
browsers and submits what users do to its intake from genbot's router (a background task per
request); the core answers through :class:`adapters.web.surface.WebSurface`.

A command accepted by a process is that process's to handle (the history records its owner). A
process handles, when it starts and then every ``PENDING_SWEEP_SECONDS``, the accepted commands
that nobody alive is handling: those of a run or a process that stopped or died (no heartbeat for
a lease), and its own whose handler ended without recording it (the database failed). A process
that joins never takes a live process's commands. A command whose every answer failed to be kept
is left pending, so it is handled again, and so is one accepted while this process stops.
Handling a command twice is harmless: the job it starts
carries the command's key, so the second finds the first's job.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from adapters import AdapterStartError, FatalHandler, log_fatal
from adapters.listener import Listener, ListenerLimits
from adapters.web.access import Access, exposure_problem
from adapters.web.app import build_app
from adapters.web.handlers import resume_commands
from adapters.web.messages import WebMessage
from adapters.web.platform import PLATFORM, WebContext
from adapters.web.playground import HISTORY_ERRORS, Playground
from adapters.web.ports import PlaygroundHistory
from adapters.web.routes import DEFAULT_CHANNELS
from adapters.web.settings import WebSettings
from adapters.web.surface import WebSurface
from bot.kernel import (
    OUTAGE,
    AdminConsole,
    ChatSettings,
    Command,
    EventRouter,
    EventSink,
    InboundEvent,
    LimitsSettings,
    ResultGallery,
    StorageError,
    backoff,
)

log = logging.getLogger(__name__)

PENDING_SWEEP_SECONDS = 5.0
PENDING_GRACE_SECONDS = 15.0
"""A command is taken over only once it was accepted this long ago, and none after a database
failure until this long after it (every heartbeat is late after an outage)."""
QUIET_SWEEP_SECONDS = 3600.0
"""How often the shared channels left quiet for ``[web] channel_idle_days`` are dropped."""
PLAYGROUND_LIMITS = ListenerLimits(max_body_bytes=256 * 1024)
"""JSON bodies up to 256 KiB; the upload route allows more
(:func:`adapters.web.handlers.upload`)."""


class WebAdapter:
    """The browser playground. Serve :attr:`app` (or call :meth:`start`) and point a browser at
    it; the core answers through :attr:`surface`. ``clock``: the wall clock its messages are
    stamped with (their order), a pending command's acceptance is judged by (another process
    takes it ``PENDING_GRACE_SECONDS`` after) and access cookies are dated with — the store's,
    which every process sharing ``history`` reads alike (on PostgreSQL the database server's:
    :class:`storage.sql.server_clock.ServerClock`)."""

    platform = PLATFORM

    def __init__(
        self,
        settings: WebSettings,
        limits: LimitsSettings | None = None,
        *,
        keepalive_seconds: float = 15.0,
        handler_timeout: float = 900.0,
        chat: ChatSettings | None = None,
        history: PlaygroundHistory | None = None,
        legacy_history: Path | None = None,
        admin_link: bool = False,
        max_image_memory: int = 256 * 1024 * 1024,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.keepalive_seconds = keepalive_seconds
        self.playground = Playground(
            upload_cache_bytes=settings.upload_cache_mb * 1024 * 1024,
            max_upload_bytes=(limits or LimitsSettings()).max_upload_bytes,
            max_document_bytes=int((chat or ChatSettings()).documents_max_mb * 1024 * 1024),
            history=history,
            max_image_memory=max_image_memory,
            messages_per_channel=settings.messages_per_channel,
            legacy_file=legacy_history,
            clock=clock,
        )
        self.surface = WebSurface(self.playground)
        self._handler_timeout: float | None = handler_timeout
        self._router: EventRouter | None = None
        self._intake: EventSink | None = None
        self._listening = False
        self._handling: set[str] = set()
        self._pending_sweep: asyncio.Task[None] | None = None
        self._quiet_sweep: asyncio.Task[None] | None = None
        self.access = Access(settings, admin_link=admin_link, clock=clock)
        self.console: AdminConsole | None = None
        """The admin page's core (``/admin``), once :meth:`attach_console` gave it."""
        self.gallery: ResultGallery | None = None
        """The gallery's core (``/gallery``), once :meth:`attach_gallery` gave it."""
        self.app = build_app(self)
        self.listener = Listener(self.app, "web playground", PLAYGROUND_LIMITS)

    @property
    def url(self) -> str:
        """``http://host:port`` of the running playground; ``RuntimeError`` before :meth:`start`."""
        if not self.playground.url:
            raise RuntimeError("the web playground is not started")
        return self.playground.url

    @property
    def admin_url(self) -> str | None:
        """The admin link (``admin_link``: ``genbot demo``): the browser that opens it becomes
        an admin. None without one, or before :meth:`start`."""
        token = self.access.admin_token
        return f"{self.playground.url}/?admin={token}" if token and self.playground.url else None

    def attach_console(self, console: AdminConsole) -> None:
        """Serve the admin page (``/admin``) on ``console``."""
        self.console = console

    def attach_gallery(self, gallery: ResultGallery) -> None:
        """Serve the gallery (``/gallery``) on ``gallery``."""
        self.gallery = gallery

    async def connected(self) -> bool:
        """Whether the playground is listening."""
        return self._listening

    @property
    def router(self) -> EventRouter:
        """Where the playground's events go; ``RuntimeError`` before :meth:`start`."""
        if self._router is None:
            raise RuntimeError("the web playground is not started")
        return self._router

    @property
    def intake(self) -> EventSink:
        """This adapter's intake (from :meth:`start` on)."""
        if self._intake is None:
            raise RuntimeError("the web playground is not started")
        return self._intake

    async def start(self, router: EventRouter, on_fatal: FatalHandler = log_fatal) -> None:
        """Listen on ``settings.host:port`` (port 0 picks a free port) and submit what users do
        to ``router``'s intake; ``OSError`` naming the address and the ``[web] port`` setting
        when it cannot. ``on_fatal`` is never called: genbot serves the playground itself."""
        if self._listening:
            raise RuntimeError("the web playground is already started")
        problem = exposure_problem(self.settings)
        if problem is not None:
            raise AdapterStartError(problem)
        self._router = router
        self._intake = router.intake(PLATFORM, deadline=self._handler_timeout)
        session_key = await self.playground.open()
        if session_key is not None:
            self.access.session_key = session_key
        try:
            port = await self.listener.start(self.settings.host, self.settings.port)
        except OSError as error:
            address = f"{self.settings.host}:{self.settings.port}"
            reason = os.strerror(error.errno) if error.errno else str(error)
            raise OSError(
                error.errno,
                f"the web playground cannot listen on {address} ({reason}); "
                "choose another [web] port (or genbot demo --port N)",
            ) from error
        self._listening = True
        host = self.settings.host
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1"
        self.playground.url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
        log.info("web playground at %s", self.playground.url)
        await self._take_pending(self.playground.clock())
        self._pending_sweep = asyncio.create_task(self._sweeping(), name="genbot-web-pending")
        if self.settings.channel_idle_days:
            self._quiet_sweep = asyncio.create_task(self._sweeping_quiet(), name="genbot-web-quiet")

    async def stop(self) -> None:
        """Close every event stream, cancel running handlers and stop listening."""
        if self._intake is not None:
            self._intake.stop()
        sweeps = [self._pending_sweep, self._quiet_sweep]
        self._pending_sweep = self._quiet_sweep = None
        for sweep in sweeps:
            if sweep is not None:
                sweep.cancel()
        await asyncio.gather(*(s for s in sweeps if s is not None), return_exceptions=True)
        listening, self._listening = self._listening, False
        self.playground.url = ""
        if listening:
            async with asyncio.timeout(15):
                await self.listener.stop()
        await self.cancel_handlers()
        await self.playground.close()

    @property
    def handler_timeout(self) -> float | None:
        """How long the core may take on one event before the user is told it gave up."""
        return self._handler_timeout

    @handler_timeout.setter
    def handler_timeout(self, seconds: float | None) -> None:
        self._handler_timeout = seconds
        if self._intake is not None:
            self._intake.deadline = seconds

    @property
    def running_handlers(self) -> int:
        """How many events the core is still handling."""
        return self._intake.running if self._intake is not None else 0

    async def cancel_handlers(self) -> None:
        """Cancel the handler tasks still running (bounded wait)."""
        if self._intake is not None:
            await self._intake.cancel()

    def dispatch(self, event: InboundEvent, event_id: str) -> None:
        """Have the core handle ``event`` in the background; failures reach the user. While
        this process stops, a command its history keeps is left pending for the processes
        that go on (or the next start) instead of being refused: it is accepted, so it is
        handled, not answered "restarting"."""
        if not self.intake.accepting and self._kept_for_later(event):
            log.info("command %s accepted while stopping: left for another process", event_id)
            return
        self._handling.add(event_id)
        self.intake.submit(event, around=lambda _: self._working(event, event_id))

    def _kept_for_later(self, event: InboundEvent) -> bool:
        """Whether ``event`` is a command the history keeps pending until a process handles
        it (every playground command, when the playground has a history)."""
        return isinstance(event, Command) and self.playground.journal is not None

    def handling(self, event_id: str) -> bool:
        """Whether the core is handling the event ``event_id`` of this process now."""
        return event_id in self._handling

    async def _take_pending(self, accepted_before: float) -> None:
        """Handle the commands this process is to handle now (see the module docstring)."""
        claimed = await self.playground.claim_pending(accepted_before)
        await resume_commands(self, claimed)

    async def _sweeping(self) -> None:
        """Every ``PENDING_SWEEP_SECONDS``: take the commands nobody alive is handling (not
        while stopping: they could only be refused). After the database failed, wait
        ``PENDING_GRACE_SECONDS`` before taking any (every process's heartbeat is late after an
        outage; the live ones need a moment to renew it)."""
        failures = 0
        while True:
            await asyncio.sleep(
                backoff(failures, most=PENDING_GRACE_SECONDS) if failures else PENDING_SWEEP_SECONDS
            )
            if not self.intake.accepting:
                continue
            try:
                if failures:
                    await asyncio.sleep(PENDING_GRACE_SECONDS)
                await self._take_pending(self.playground.clock() - PENDING_GRACE_SECONDS)
            except StorageError as error:
                failures += 1
                OUTAGE.failed("pending commands", error)
            else:
                failures = 0

    async def drop_quiet_channels(self) -> list[str]:
        """Drop the shared channels no message was made in for ``[web] channel_idle_days``
        (:meth:`Playground.expire_quiet`; the default channels stay); those dropped."""
        made_before = self.playground.clock() - self.settings.channel_idle_days * 86400
        return await self.playground.expire_quiet(made_before, DEFAULT_CHANNELS)

    async def _sweeping_quiet(self) -> None:
        """:meth:`drop_quiet_channels` at start, then every :data:`QUIET_SWEEP_SECONDS` (a
        failure waits for the next time)."""
        while True:
            try:
                dropped = await self.drop_quiet_channels()
            except HISTORY_ERRORS as error:
                OUTAGE.failed("quiet playground channels", error)
            except Exception:
                log.exception("dropping the quiet playground channels failed")
            else:
                if dropped:
                    log.info("dropped %d quiet playground channels", len(dropped))
            await asyncio.sleep(QUIET_SWEEP_SECONDS)

    @contextlib.asynccontextmanager
    async def _working(self, event: InboundEvent, event_id: str) -> AsyncIterator[None]:
        working = {"type": "working", "event_id": event_id, "thread": event.place.thread_id}
        hub = self.playground.hub
        hub.publish(event.place.channel_id, {**working, "active": True})
        try:
            yield
        finally:
            self._handling.discard(event_id)
            hub.publish(event.place.channel_id, {**working, "active": False})
        request = event.context
        if isinstance(event, Command) and isinstance(request, WebContext):
            shown_id = request.request_message_id or ""
            shown: WebMessage | None = self.playground.store.get(shown_id)
            lost_answer = shown_id in self.playground.unkept_replies
            self.playground.unkept_replies.discard(shown_id)
            if shown is None or not shown.pending:
                return
            if lost_answer and not self.playground.store.answered(shown_id):
                log.info("command %s got no answer (the database failed); handled again", shown_id)
                return
            await self.playground.settle(shown)
