"""The playground's in-memory model: channel messages, served images and users' uploads.

Only what the adapter itself showed lives here; the core's durable state is in its storage.
Everything is bounded: a channel keeps its latest messages, and images no message shows any more
are dropped with them. Users' pending uploads are :mod:`adapters.web.uploads`.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import re
import secrets
from collections import Counter, OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal
from urllib.parse import unquote

from PIL import Image

from adapters.web.platform import is_dm_channel
from bot.kernel import Button, ImageFile

MessageKind = Literal["bot", "user", "ephemeral"]
BOT_AUTHOR: dict[str, Any] = {"id": "genbot", "name": "genbot", "bot": True}

_IMAGE_SIGNATURES: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"WEBP", 8, "image/webp"),
)
_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")


DOCUMENT_TYPES = frozenset({"application/pdf", "text/plain"})
"""The types documents users attach are kept and served as (never one a browser runs)."""


def sniff_image_type(data: bytes) -> str | None:
    """``image/png``, ``image/jpeg``, ``image/gif`` or ``image/webp`` from the bytes, else None."""
    for signature, offset, content_type in _IMAGE_SIGNATURES:
        if data[offset : offset + len(signature)] == signature:
            if content_type == "image/webp" and not data.startswith(b"RIFF"):
                continue
            return content_type
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height of an image (only its header is read), or None when unreadable."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            return width, height
    except (OSError, ValueError, Image.DecompressionBombError):
        return None


def safe_filename(name: str | None, default: str = "image.png") -> str:
    """A filename safe in a URL path segment and a Content-Disposition header."""
    base = unquote(name or "").replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _UNSAFE_FILENAME.sub("_", base).strip("._")[:80]
    return cleaned or default


@dataclass
class WebMessage:
    """One message as the browser shows it."""

    id: str
    channel: str
    thread: str | None
    kind: MessageKind
    author: dict[str, Any]
    text: str = ""
    images: list[dict[str, Any]] = field(default_factory=list)
    buttons: tuple[tuple[Button, ...], ...] = ()
    from_model: bool = False
    mention: str | None = None
    reply_to: str | None = None
    command: str | None = None
    thread_info: dict[str, str] | None = None
    visible_to: str | None = None
    key: str | None = None
    pending: bool = False
    """A command's message whose handler has not finished yet."""
    requester_is_admin: bool = False
    created: float = field(kw_only=True)
    """When the message was posted, on the playground's clock (the store's: every process
    sharing its history orders and judges messages by it)."""
    edited: float | None = None
    deleted: bool = False
    version: int = 0
    """Which save of the message this is (the history counts them; 0: never saved)."""

    def button(self, custom_id: str) -> Button | None:
        """The button ``custom_id`` on the message (disabled or not), or None."""
        return next((b for row in self.buttons for b in row if b.custom_id == custom_id), None)

    def image_keys(self) -> set[str]:
        return {image["key"] for image in self.images}

    def to_json(self) -> dict[str, Any]:
        """The message as the page's JSON."""
        return {
            "id": self.id,
            "channel": self.channel,
            "thread": self.thread,
            "kind": self.kind,
            "author": self.author,
            "text": self.text,
            "images": [{k: v for k, v in image.items() if k != "key"} for image in self.images],
            "buttons": [
                [
                    {
                        "label": b.label,
                        "custom_id": b.custom_id,
                        "style": b.style,
                        "action": b.action,
                        "disabled": b.disabled,
                        "menu": b.menu_text,
                    }
                    for b in row
                ]
                for row in self.buttons
            ],
            "from_model": self.from_model,
            "mention": self.mention,
            "reply_to": self.reply_to,
            "command": self.command,
            "thread_info": self.thread_info,
            "private": self.visible_to is not None,
            "created": self.created,
            "edited": self.edited,
            "deleted": self.deleted,
        }


KEPT_APART = frozenset({"pending", "version"})
"""What the store keeps beside a message's record, not in it."""


def message_record(message: WebMessage) -> dict[str, Any]:
    """Everything about ``message`` but ``pending`` and ``version`` (kept apart) as JSON-ready
    values: what the history saves (:func:`adapters.web.journal.restored` reads it back)."""
    record = {
        f.name: getattr(message, f.name) for f in fields(WebMessage) if f.name not in KEPT_APART
    }
    record["buttons"] = [
        [[b.label, b.action, b.ref, b.style, b.disabled] for b in row] for row in message.buttons
    ]
    return record


def names(message: WebMessage, user_id: str) -> bool:
    """Whether ``message`` names ``user_id`` anywhere: its author, audience or mention, its
    text, a button, or anywhere else in its record (a thread's name, an image's file name,
    the command): as the history finds it (its record as text holds the id)."""
    return (
        user_id in (message.author.get("id"), message.visible_to, message.mention)
        or user_id in message.text
        or any(user_id in b.custom_id for row in message.buttons for b in row)
        or user_id in json.dumps(message_record(message), ensure_ascii=False)
    )


def channel_order(message: WebMessage) -> tuple[float, str]:
    """Where ``message`` stands in its channel: by the time it was made (as the page places
    it), then by id; the same in every process and after a restart, whenever it was saved."""
    return message.created, message.id


@dataclass(frozen=True)
class StoredFile:
    """Bytes the adapter serves."""

    filename: str
    data: bytes
    content_type: str
    owner: str = ""
    width: int | None = None
    height: int | None = None

    @property
    def size(self) -> int:
        return len(self.data)


class MessageStore:
    """Messages per channel (threads included) and the images they show: the bytes of the
    newest images up to ``max_image_bytes`` (older ones are only in the history file, if any)."""

    def __init__(
        self, max_messages_per_channel: int = 500, max_image_bytes: int = 256 * 1024 * 1024
    ) -> None:
        self._max_messages = max_messages_per_channel
        self._max_image_bytes = max_image_bytes
        self._channels: dict[str, deque[WebMessage]] = {}
        self._dms: OrderedDict[str, None] = OrderedDict()
        """The DM channels kept, the one a message came to (or changed in) last, last."""
        self._by_id: dict[str, WebMessage] = {}
        self._by_key: dict[tuple[str, str | None, str], WebMessage] = {}
        self._images: OrderedDict[str, StoredFile] = OrderedDict()
        self._image_bytes = 0
        self._shown: Counter[str] = Counter()
        """How many kept messages show each image (a message that leaves then tells at once
        whether its images are still shown, without reading every kept message)."""
        self._id_prefix = secrets.token_hex(3)
        self._counter = itertools.count(1)

    @property
    def instance(self) -> str:
        """Differs between runs of the process: browsers reload when it changes."""
        return self._id_prefix

    def new_id(self) -> str:
        """A message id unique across restarts of the process."""
        return f"{self._id_prefix}-{next(self._counter)}"

    def add(self, message: WebMessage) -> WebMessage:
        """Keep ``message`` in its place in the channel's order (:func:`channel_order`: a
        message saved late, by another process or after a slower save, goes before the younger
        ones); the channel's oldest message goes when the channel is full."""
        messages = self._channels.setdefault(message.channel, deque())
        self._touch(message.channel)
        place = len(messages)
        while place and channel_order(messages[place - 1]) > channel_order(message):
            place -= 1
        messages.insert(place, message)
        self._by_id[message.id] = message
        self._shown.update(message.image_keys())
        if message.key is not None:
            self._by_key[message.channel, message.thread, message.key] = message
        while len(messages) > self._max_messages:
            dropped = messages.popleft()
            del self._by_id[dropped.id]
            if dropped.key is not None:
                self._by_key.pop((dropped.channel, dropped.thread, dropped.key), None)
            self._unshow(dropped.image_keys())
        return message

    def restore(self, messages: list[WebMessage], images: dict[str, StoredFile]) -> None:
        """Take back what an earlier run showed (oldest first) with the images it shows."""
        for key, stored in images.items():
            self._remember(key, stored)
        for message in messages:
            self.add(message)

    def merge(self, message: WebMessage, images: dict[str, StoredFile]) -> WebMessage | None:
        """Take a message another process saved: a known one is updated in place, a new one
        added; the images it shows are kept (within ``max_image_bytes``). A copy older than
        the one kept (a lower version: read before a later save) changes nothing: None."""
        known = self._by_id.get(message.id)
        if known is not None and known.version >= message.version:
            return None
        for key, stored in images.items():
            self._remember(key, stored)
        if known is None:
            return self.add(message)
        self._take_fields(known, message)
        return known

    def update(self, message: WebMessage) -> WebMessage | None:
        """Take a saved change of a kept message (made on a copy, so a change that could not be
        saved never shows): the kept message gets its fields, and the images it no longer
        shows go. A newer save already shown (from another process) is kept instead: None."""
        known = self._by_id.get(message.id)
        if known is None:
            return self.add(message)
        if known.version > message.version:
            return None
        self._take_fields(known, message)
        return known

    def _take_fields(self, known: WebMessage, message: WebMessage) -> None:
        """``known`` (kept) takes ``message``'s fields; the images it no longer shows go
        unless another kept message shows them."""
        old_keys = known.image_keys()
        for item in fields(WebMessage):
            setattr(known, item.name, getattr(message, item.name))
        self._touch(known.channel)
        self._shown.update(known.image_keys())
        self._unshow(old_keys)

    def _touch(self, channel: str) -> None:
        if is_dm_channel(channel):
            self._dms[channel] = None
            self._dms.move_to_end(channel)

    def get(self, message_id: str) -> WebMessage | None:
        return self._by_id.get(message_id)

    def holds(self, channel: str) -> bool:
        """Whether a message of ``channel`` is kept."""
        return channel in self._channels

    def dm_count(self) -> int:
        """How many DM channels are kept."""
        return len(self._dms)

    def dms(self) -> list[str]:
        """The DM channels kept, the quietest (no message came or changed there for longest)
        first."""
        return list(self._dms)

    def starter(self, channel: str) -> str | None:
        """Who wrote the oldest message kept in ``channel`` (who started it, as far as the
        store keeps it), or None when that is genbot's."""
        messages = self._channels.get(channel)
        if not messages or messages[0].kind != "user":
            return None
        author = messages[0].author.get("id")
        return author if isinstance(author, str) else None

    def has_pending(self, channel: str) -> bool:
        """Whether a command of ``channel`` waits for its handler."""
        return any(m.pending for m in self._channels.get(channel, ()))

    def newest(self, channel: str) -> WebMessage | None:
        """The youngest message kept in ``channel`` (:func:`channel_order`), if any."""
        messages = self._channels.get(channel)
        return messages[-1] if messages else None

    def drop_channel(self, channel: str) -> None:
        """Forget every message of ``channel`` (and the images only they showed)."""
        messages = self._channels.pop(channel, None)
        self._dms.pop(channel, None)
        for message in messages or ():
            del self._by_id[message.id]
            if message.key is not None:
                self._by_key.pop((message.channel, message.thread, message.key), None)
            self._unshow(message.image_keys())

    def remove_made_before(self, channel: str, made_before: float) -> list[WebMessage]:
        """Forget the messages of ``channel`` made before ``made_before`` (:meth:`remove`);
        those messages."""
        old = [m for m in self._channels.get(channel, ()) if m.created < made_before]
        return [message for message in old if self.remove(message.id) is not None]

    def about(self, user_id: str, channel: str) -> list[WebMessage]:
        """The messages ``user_id`` wrote, that mention them, that only they see, that name
        them (an admin's about them), those of ``channel`` (their DM), and the answers to any
        of these (genbot's reply to a user's message names neither): as the history finds
        them (:meth:`storage.PlaygroundHistory.about_user`)."""
        kept = [m for messages in self._channels.values() for m in messages]
        naming = {m.id for m in kept if m.channel == channel or names(m, user_id)}
        return [m for m in kept if m.id in naming or m.reply_to in naming]

    def images_only_of(self, messages: Sequence[WebMessage]) -> set[str]:
        """The keys of the images kept that ``messages`` show and no other message does."""
        ids = {message.id for message in messages}
        shown = set().union(*(message.image_keys() for message in messages))
        others = (m.image_keys() for m in self._by_id.values() if m.id not in ids)
        return {key for key in shown - set().union(*others) if key in self._images}

    def remove(self, message_id: str) -> WebMessage | None:
        """Forget a message (and the images only it showed; its channel, when it was the last
        there); the message, if it was kept."""
        message = self._by_id.pop(message_id, None)
        if message is None:
            return None
        left = self._channels[message.channel]
        left.remove(message)
        if not left:
            del self._channels[message.channel]
            self._dms.pop(message.channel, None)
        if message.key is not None:
            self._by_key.pop((message.channel, message.thread, message.key), None)
        self._unshow(message.image_keys())
        return message

    def keyed(self, channel: str, thread: str | None, key: str) -> WebMessage | None:
        """The message posted in the channel (or thread) with ``key``, if it is still kept."""
        found = self._by_key.get((channel, thread, key))
        return None if found is None or found.deleted else found

    def saved_versions(self) -> dict[str, int]:
        """The version of each message kept that was saved (those never saved, shown only
        here, left out)."""
        return {m.id: m.version for m in self._by_id.values() if m.version > 0}

    def pending(self) -> list[WebMessage]:
        """Commands whose handling had not finished, oldest first."""
        return [m for messages in self._channels.values() for m in messages if m.pending]

    def answered(self, message_id: str) -> bool:
        """Whether genbot has replied to ``message_id`` (publicly or privately)."""
        return any(
            m.reply_to == message_id and m.kind != "user"
            for messages in self._channels.values()
            for m in messages
        )

    def discard_images(self, message: WebMessage) -> None:
        """Drop the images of a message that was never kept (unless another one shows them)."""
        self._forget_images(message.image_keys())

    def stored_images(self, message: WebMessage) -> list[tuple[str, StoredFile]]:
        """The images ``message`` shows, with their keys."""
        return [(key, self._images[key]) for key in message.image_keys() if key in self._images]

    def channels(self) -> list[str]:
        return list(self._channels)

    def history(self, channel: str, user_id: str, limit: int = 200) -> list[WebMessage]:
        """The channel's latest messages that ``user_id`` may see, in the channel's order
        (:func:`channel_order`)."""
        visible = [
            message
            for message in self._channels.get(channel, ())
            if not message.deleted and (message.visible_to is None or message.visible_to == user_id)
        ]
        return visible[-limit:]

    def replace_images(self, message: WebMessage, images: tuple[ImageFile, ...]) -> None:
        """Show ``images`` on ``message`` (served at stable, content-addressed URLs)."""
        old_keys = message.image_keys()
        message.images = [self._keep_image(image) for image in images]
        if self._by_id.get(message.id) is message:
            self._shown.update(message.image_keys())
            self._unshow(old_keys)
        else:
            self._forget_images(old_keys - message.image_keys())

    def image(self, key: str) -> StoredFile | None:
        return self._images.get(key)

    def _keep_image(self, image: ImageFile) -> dict[str, Any]:
        key = hashlib.sha256(image.data).hexdigest()[:32]
        filename = safe_filename(image.filename)
        stored = self._images.get(key)
        if stored is None:
            content_type = sniff_image_type(image.data)
            size = image_size(image.data) if content_type else None
            if content_type is None and image.content_type in DOCUMENT_TYPES:
                content_type = image.content_type
            stored = StoredFile(
                filename,
                image.data,
                content_type or "application/octet-stream",
                width=size[0] if size else None,
                height=size[1] if size else None,
            )
            self._remember(key, stored)
        return {
            "key": key,
            "url": f"/images/{key}/{filename}",
            "filename": filename,
            "content_type": stored.content_type,
            "width": stored.width,
            "height": stored.height,
        }

    def _unshow(self, keys: set[str]) -> None:
        """A kept message no longer shows ``keys``: those no other kept message shows go."""
        self._shown.subtract(keys)
        for key in keys:
            if self._shown[key] <= 0:
                del self._shown[key]
        self._forget_images(keys)

    def _forget_images(self, keys: set[str]) -> None:
        """Drop ``keys``' bytes where no kept message shows them."""
        for key in keys:
            if key not in self._shown and (dropped := self._images.pop(key, None)) is not None:
                self._image_bytes -= dropped.size

    def keep_image(self, key: str, stored: StoredFile) -> None:
        """Keep an image read back from the history in memory (within ``max_image_bytes``)."""
        self._remember(key, stored)

    def _remember(self, key: str, stored: StoredFile) -> None:
        """Keep ``stored``'s bytes in memory; the oldest go past ``max_image_bytes`` (never the
        one just kept)."""
        if key in self._images:
            return
        self._images[key] = stored
        self._image_bytes += stored.size
        while self._image_bytes > self._max_image_bytes and len(self._images) > 1:
            _, oldest = self._images.popitem(last=False)
            self._image_bytes -= oldest.size
