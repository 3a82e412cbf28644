"""The web playground adapter: a :class:`bot.events.Surface` that is also the chat platform.

The adapter keeps the channels' messages in memory and, given a ``history`` file, on disk
(:mod:`adapters.web.journal`: written before browsers see a change, so a restart loses
nothing), serves them to the page, streams every change as server-sent events, and hands what
users do to the core (``EventHandler.handle``) in a background task per request. Commands
accepted by a run that died before handling them are handled when the next run starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from adapters import AdapterStartError
from adapters.listener import Listener, ListenerLimits
from adapters.runner import AdapterRunner
from adapters.web.access import Access, exposure_problem
from adapters.web.hub import EventHub
from adapters.web.journal import PlaygroundJournal
from adapters.web.messages import BOT_AUTHOR, MessageStore, StoredFile, WebMessage
from adapters.web.platform import (
    PLATFORM,
    WEB_LIMITS,
    PendingModal,
    WebContext,
    reply_target,
    web_place,
)
from adapters.web.translate import modal_json
from adapters.web.uploads import UploadCache
from bot.config import LimitsSettings, WebSettings
from bot.events import (
    Attachment,
    Command,
    Event,
    EventHandler,
    ImageFile,
    InboundEvent,
    MessageGone,
    MessageRef,
    Modal,
    OutMessage,
    Place,
    SurfaceError,
    User,
)

log = logging.getLogger(__name__)

MAX_BUTTON_ROWS = 5
MAX_PENDING_MODALS = 20
PLAYGROUND_LIMITS = ListenerLimits(max_body_bytes=256 * 1024)
"""JSON bodies up to 256 KiB; the upload route allows more
(:func:`adapters.web.handlers.upload`)."""


class WebAdapter:
    """The browser playground. Serve :attr:`app` (or call :meth:`start`) and point a browser at
    it; the core answers through the :class:`bot.events.Surface` methods below."""

    platform = PLATFORM

    def __init__(
        self,
        settings: WebSettings,
        handler: EventHandler,
        limits: LimitsSettings | None = None,
        *,
        keepalive_seconds: float = 15.0,
        handler_timeout: float = 900.0,
        history: Path | None = None,
        local_admins: bool = False,
    ) -> None:
        from adapters.web.routes import build_app

        self.settings = settings
        self.handler = handler
        self.limits = WEB_LIMITS
        self.max_upload_bytes = (limits or LimitsSettings()).max_upload_bytes
        self.keepalive_seconds = keepalive_seconds
        self.store = MessageStore()
        self.uploads = UploadCache(settings.upload_cache_mb * 1024 * 1024)
        self.history = history
        self.journal: PlaygroundJournal | None = None
        self.hub = EventHub()
        self._modals: dict[str, OrderedDict[str, PendingModal]] = {}
        self.runner = AdapterRunner(
            handler, self, platform=PLATFORM, handler_timeout=handler_timeout
        )
        self._listening = False
        self._url = ""
        self.access = Access(settings, local_admins=local_admins)
        self.app = build_app(self)
        self.listener = Listener(self.app, "web playground", PLAYGROUND_LIMITS)

    @property
    def surface(self) -> WebAdapter:
        """The playground is its own :class:`bot.events.Surface`."""
        return self

    @property
    def url(self) -> str:
        """``http://host:port`` of the running playground; ``RuntimeError`` before :meth:`start`."""
        if not self._url:
            raise RuntimeError("the web playground is not started")
        return self._url

    async def connected(self) -> bool:
        """Whether the playground is listening."""
        return self._listening

    async def start(self) -> None:
        """Listen on ``settings.host:port`` (port 0 picks a free port); ``OSError`` naming the
        address and the ``[web] port`` setting when it cannot."""
        if self._listening:
            raise RuntimeError("the web playground is already started")
        problem = exposure_problem(self.settings)
        if problem is not None:
            raise AdapterStartError(problem)
        if self.history is not None and self.journal is None:
            self.journal = await PlaygroundJournal.open(self.history)
            saved = await self.journal.load()
            self.store.restore(saved.messages, saved.images)
            self.access.session_key = await self.journal.session_key()
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
        self._url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
        log.info("web playground at %s", self._url)
        from adapters.web.handlers import resume_commands

        await resume_commands(self)

    async def stop(self) -> None:
        """Close every event stream, cancel running handlers and stop listening."""
        self.runner.stop_intake()
        listening, self._listening = self._listening, False
        self._url = ""
        if listening:
            async with asyncio.timeout(15):
                await self.listener.stop()
        await self.cancel_handlers()
        journal, self.journal = self.journal, None
        if journal is not None:
            await journal.close()

    @property
    def handler_timeout(self) -> float | None:
        """How long the core may take on one event before the user is told it gave up."""
        return self.runner.handler_timeout

    @handler_timeout.setter
    def handler_timeout(self, seconds: float | None) -> None:
        self.runner.handler_timeout = seconds

    @property
    def running_handlers(self) -> int:
        """How many events the core is still handling."""
        return self.runner.running

    async def cancel_handlers(self) -> None:
        """Cancel the handler tasks still running (bounded wait)."""
        await self.runner.cancel()

    # ----- inbound: what the routes hand over -----

    def dispatch(self, event: InboundEvent, event_id: str) -> None:
        """Have the core handle ``event`` in the background; failures reach the user."""
        self.runner.submit(event, around=lambda _: self._working(event, event_id))

    @contextlib.asynccontextmanager
    async def _working(self, event: InboundEvent, event_id: str) -> AsyncIterator[None]:
        working = {"type": "working", "event_id": event_id, "thread": event.place.thread_id}
        self.hub.publish(event.place.channel_id, {**working, "active": True})
        try:
            yield
        finally:
            self.hub.publish(event.place.channel_id, {**working, "active": False})
        request = event.context
        if isinstance(event, Command) and isinstance(request, WebContext):
            shown = self.store.get(request.request_message_id or "")
            if shown is not None and shown.pending:
                await self.settle(shown)

    async def settle(self, message: WebMessage) -> None:
        """Mark a command's message as handled."""
        message.pending = False
        if self.journal is not None:
            await self.journal.settle(message.id)

    async def post_user_message(
        self,
        user: User,
        place: Place,
        text: str,
        files: list[StoredFile],
        command: str | None = None,
    ) -> WebMessage:
        """Show what a user sent (text, command and images) in the channel; a command stays
        pending (handled again after a restart) until its handler has run."""
        message = WebMessage(
            id=self.store.new_id(),
            channel=place.channel_id,
            thread=place.thread_id,
            kind="user",
            author={"id": user.id, "name": user.name, "bot": False},
            text=text,
            command=command,
            pending=command is not None,
            requester_is_admin=user.is_admin,
        )
        images = tuple(ImageFile(f.filename, f.data, f.content_type) for f in files)
        self.store.replace_images(message, images)
        await self._keep("post", message, new=True)
        return message

    def attachments_of(self, message: WebMessage, origin: str) -> list[Attachment]:
        """The core's view of a user message's images: bytes included, URLs absolute."""
        attachments = []
        for image in message.images:
            stored = self.store.image(image["key"])
            data = stored.data if stored is not None else b""
            attachments.append(
                Attachment(
                    filename=image["filename"],
                    url=origin + image["url"],
                    content_type=image["content_type"],
                    size=len(data),
                    data=data,
                )
            )
        return attachments

    def pending_modal(self, user_id: str, custom_id: str) -> PendingModal | None:
        pending = self._modals.get(user_id)
        return pending.get(custom_id) if pending is not None else None

    def close_modal(self, user_id: str, custom_id: str) -> None:
        pending = self._modals.get(user_id)
        if pending is not None:
            pending.pop(custom_id, None)

    # ----- Surface -----

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        """Post ``message`` in ``place`` and stream it to the channel's browsers; a keyed
        message the playground already shows is returned as it is."""
        self._check(place, message)
        if message.key is not None and (earlier := await self.posted(place, message.key)):
            return earlier
        posted = WebMessage(
            id=self.store.new_id(),
            channel=place.channel_id,
            thread=place.thread_id,
            kind="bot",
            author=BOT_AUTHOR,
            text=message.text,
            buttons=message.buttons,
            from_model=message.from_model,
            mention=message.mention_user_id,
            reply_to=reply_target(origin),
            key=message.key,
        )
        self.store.replace_images(posted, message.images)
        await self._keep("post", posted, new=True)
        return MessageRef(place, posted.id)

    async def posted(self, place: Place, key: str) -> MessageRef | None:
        """The message the playground shows in ``place`` with ``key``, if any."""
        shown = self.store.keyed(place.channel_id, place.thread_id, key)
        return MessageRef(place, shown.id) if shown is not None else None

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        """Replace a genbot message's text and buttons (and its images, when some are given)."""
        self._check(ref.place, message)
        posted = self._own(ref)
        posted.text = message.text
        posted.buttons = message.buttons
        posted.from_model = message.from_model
        posted.mention = message.mention_user_id
        if message.images:
            self.store.replace_images(posted, message.images)
        posted.edited = time.time()
        await self._keep("edit", posted)

    async def delete(self, ref: MessageRef) -> None:
        """Remove a genbot message from the channel (and from the browsers showing it)."""
        posted = self._own(ref)
        posted.deleted = True
        posted.text, posted.buttons = "", ()
        self.store.replace_images(posted, ())
        posted.edited = time.time()
        await self._keep("delete", posted)

    async def link(self, ref: MessageRef) -> str | None:
        """An address of the playground that opens the channel at the message."""
        if not self._url:
            return None
        return f"{self._url}/#{ref.place.channel_id}/{ref.message_id}"

    def _own(self, ref: MessageRef) -> WebMessage:
        posted = self.store.get(ref.message_id)
        if posted is None or posted.kind != "bot" or posted.deleted:
            raise MessageGone(f"no genbot message {ref.message_id!r} in the playground")
        return posted

    async def send_ephemeral(self, origin: Event, text: str) -> None:
        """Show ``text`` to ``origin``'s user only, marked "only you can see this"."""
        self._check_text(text)
        message = WebMessage(
            id=self.store.new_id(),
            channel=origin.place.channel_id,
            thread=origin.place.thread_id,
            kind="ephemeral",
            author=BOT_AUTHOR,
            text=text,
            reply_to=reply_target(origin),
            visible_to=origin.user.id,
        )
        await self._keep("ephemeral", message, new=True)

    async def open_modal(self, origin: Event, modal: Modal) -> None:
        """Open ``modal`` as a dialog in the browsers of ``origin``'s user; a region field
        draws on the image of the message the form was opened from."""
        modal = self._with_image(modal, reply_target(origin))
        pending = self._modals.setdefault(origin.user.id, OrderedDict())
        pending.pop(modal.custom_id, None)
        pending[modal.custom_id] = PendingModal(modal, origin.place, reply_target(origin))
        while len(pending) > MAX_PENDING_MODALS:
            pending.popitem(last=False)
        payload = {"type": "modal", "thread": origin.place.thread_id, "modal": modal_json(modal)}
        self.hub.publish(origin.place.channel_id, payload, visible_to=origin.user.id)

    def _with_image(self, modal: Modal, message_id: str | None) -> Modal:
        shown = self.store.get(message_id or "")
        if shown is None or not shown.images:
            return modal
        url = str(shown.images[0]["url"])
        fields = tuple(
            replace(field, image_url=url) if field.kind == "region" else field
            for field in modal.fields
        )
        return replace(modal, fields=fields)

    async def typing(self, place: Place) -> None:
        """Show "genbot is typing…" in ``place`` for a few seconds."""
        self.hub.publish(
            place.channel_id, {"type": "typing", "thread": place.thread_id, "seconds": 8}
        )

    async def start_thread(self, ref: MessageRef, name: str) -> Place:
        """Open a thread on a message; its messages show in the page's thread panel."""
        message = self.store.get(ref.message_id)
        if message is None or message.kind == "ephemeral":
            raise SurfaceError(f"no message {ref.message_id!r} to start a thread on")
        if message.thread is not None:
            raise SurfaceError("a thread cannot be started inside a thread")
        message.thread_info = {"id": message.id, "name": name.strip()[:100] or "thread"}
        await self._keep("edit", message)
        return web_place(message.channel, message.id)

    async def download(self, attachment: Attachment) -> bytes:
        """The bytes of an image the playground holds."""
        if attachment.data is not None:
            return attachment.data
        marker = "/images/"
        if marker in attachment.url:
            key = attachment.url.split(marker, 1)[1].split("/", 1)[0]
            stored = self.store.image(key)
            if stored is not None:
                return stored.data
        raise SurfaceError(f"the playground does not hold {attachment.filename!r}")

    # ----- helpers -----

    async def _keep(self, kind: str, message: WebMessage, *, new: bool = False) -> None:
        """Write ``message`` to the history file, then keep it in memory (``new``) and show it
        to the browsers; :class:`SurfaceError` when it cannot be written (nothing is shown)."""
        if self.history is not None:
            if self.journal is None:
                raise SurfaceError("the playground is stopped")
            try:
                await self.journal.save(message, self.store.stored_images(message))
            except (sqlite3.Error, OSError, RuntimeError) as error:
                if new:
                    self.store.discard_images(message)
                raise SurfaceError(f"the playground could not keep the message: {error}") from None
        if new:
            self.store.add(message)
        self._publish_message(kind, message)

    def _publish_message(self, kind: str, message: WebMessage) -> None:
        payload: dict[str, Any] = {"type": kind, "message": message.to_json()}
        self.hub.publish(message.channel, payload, visible_to=message.visible_to)

    def _check(self, place: Place, message: OutMessage) -> None:
        if place.platform != PLATFORM:
            raise SurfaceError(f"the web playground cannot post to platform {place.platform!r}")
        self._check_text(message.text)
        if len(message.buttons) > MAX_BUTTON_ROWS:
            raise SurfaceError(f"at most {MAX_BUTTON_ROWS} rows of buttons")
        if any(len(row) > self.limits.max_buttons_per_row for row in message.buttons):
            raise SurfaceError(f"at most {self.limits.max_buttons_per_row} buttons a row")

    def _check_text(self, text: str) -> None:
        if len(text) > self.limits.max_text:
            raise SurfaceError(
                f"message of {len(text)} characters; the playground takes {self.limits.max_text}"
            )
