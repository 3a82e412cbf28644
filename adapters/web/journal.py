"""The playground's messages in genbot's storage: what a browser shows survives a restart, and
every genbot process sharing the database shows it.

The playground is its own chat platform, so like a platform it keeps what it showed: every
message (with its key, see :attr:`bot.kernel.outbound.OutMessage.key`) and the images it shows
are saved (:class:`adapters.web.ports.PlaygroundHistory`) before browsers see them. A command's
message is saved before the playground accepts the command and stays ``pending`` until its
handler has run, so a command accepted just before the process died is handled after the
restart instead of being lost.
Each channel keeps its latest ``max_messages_per_channel`` messages, as in memory.

The notices of the messages other processes save, and of the users they forget, arrive through
:meth:`PlaygroundJournal.updates`. A playground history file of an earlier genbot
(``genbot.playground.db`` beside a SQLite database) is imported once, then renamed
``….imported``.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.web.forgotten import Forgotten
from adapters.web.messages import StoredFile, WebMessage, message_record
from adapters.web.notice import Notice
from adapters.web.platform import DM_PREFIX
from adapters.web.ports import (
    ImageToSave,
    MessageToSave,
    PlaygroundHistory,
    StoredImage,
)
from bot.kernel import Button

LEGACY_MESSAGES = "SELECT id, channel, pending, image_keys, body FROM messages ORDER BY seq"
LEGACY_IMAGES = "SELECT key, filename, content_type, width, height, data FROM images"
IMPORT_TOGETHER = 100
"""How many of an earlier genbot's messages are saved at once when its file is imported: they go
together in a few transactions, not one apiece."""


def playground_path(database: Path) -> Path:
    """Where an earlier genbot kept the playground's messages: beside its database
    (``genbot.db`` → ``genbot.playground.db``)."""
    return database.with_name(f"{database.stem}.playground{database.suffix or '.db'}")


def restored(record: dict[str, Any], pending: bool, version: int = 0) -> WebMessage:
    """The message saved as ``record`` (its ``version``-th save)."""
    buttons = tuple(tuple(Button(*saved) for saved in row) for row in record["buttons"])
    return WebMessage(**{**record, "buttons": buttons, "pending": pending, "version": version})


def _file(image: StoredImage) -> StoredFile:
    return StoredFile(image.filename, image.data, image.content_type, "", image.width, image.height)


@dataclass(frozen=True)
class Saved:
    """What the history holds: messages (oldest first, each channel's latest) and their images."""

    messages: list[WebMessage]
    images: dict[str, StoredFile]


class PlaygroundJournal:
    """The playground's view of its :class:`~adapters.web.ports.PlaygroundHistory`."""

    def __init__(self, history: PlaygroundHistory, max_messages_per_channel: int = 500) -> None:
        self._history = history
        self._keep = max_messages_per_channel

    async def load(
        self, max_image_bytes: int | None = None, *, most_dms: int | None = None
    ) -> Saved:
        """Each channel's latest messages and the images they show (with ``max_image_bytes``,
        those of the newest messages that fit; :meth:`image` reads the others); with
        ``most_dms``, only the DMs a message was last saved in, as many."""
        messages, images = await self._history.load_playground(
            self._keep, max_image_bytes=max_image_bytes, dm_prefix=DM_PREFIX, most_dms=most_dms
        )
        return Saved(
            [restored(dict(m.body), m.pending, m.version) for m in messages],
            {image.key: _file(image) for image in images},
        )

    async def channel(self, channel: str) -> list[WebMessage]:
        """One channel's latest messages (oldest first), without their images (:meth:`image`
        reads one when it is wanted)."""
        messages = await self._history.playground_channel(channel, self._keep)
        return [restored(dict(m.body), m.pending, m.version) for m in messages]

    async def save(
        self,
        message: WebMessage,
        images: Iterable[tuple[str, StoredFile]],
        *,
        answers: str | None = None,
        news: bool = False,
    ) -> int:
        """Save ``message`` (new or changed) with the images it shows; the version saved.
        ``answers``: the command it marks handled (a message of genbot's replying to it);
        ``news``: the change marks its channel unread (the other processes are told so in its
        :class:`~adapters.web.notice.Notice`)."""
        notice = Notice(message.id, message.channel, news, message.mention, message.visible_to)
        stored = MessageToSave(
            message.id,
            message.channel,
            message.pending,
            tuple(sorted(message.image_keys())),
            message_record(message),
            answers=answers,
            notice=notice.text(),
        )
        shown = [
            ImageToSave(key, f.filename, f.content_type, f.width, f.height, f.data)
            for key, f in images
        ]
        return await self._history.save_playground_message(stored, shown, keep=self._keep)

    async def expire(self, made_before: float, spared: Sequence[str]) -> list[str]:
        """Delete the shared channels (not DMs, nor ``spared``) no message was made in since
        ``made_before``; those deleted."""
        return await self._history.expire_playground_channels(
            made_before, dm_prefix=DM_PREFIX, spared=spared
        )

    async def about_user(self, user_id: str, channel: str) -> tuple[list[str], list[str]]:
        """What the storage keeps naming ``user_id`` or in ``channel``: the messages' ids and
        the keys of the images only they show."""
        return await self._history.about_user(user_id, channel)

    async def forget_user(self, user_id: str, channel: str) -> tuple[list[str], list[str]]:
        """Delete what :meth:`about_user` finds; what it found. The other processes are told
        (:class:`~adapters.web.forgotten.Forgotten`) with the deletion."""
        told = Forgotten(user_id).text()
        return await self._history.forget_user(user_id, channel, notice=told)

    async def forgotten_among(self, user_ids: list[str]) -> dict[str, float]:
        """Which of ``user_ids`` another process forgot lately, each with when (see
        :meth:`~adapters.web.ports.PlaygroundHistory.forgotten_among`)."""
        return await self._history.forgotten_among(user_ids)

    async def claim_pending(self, accepted_before: float) -> list[str]:
        """The commands this process is to handle now (see
        :meth:`~adapters.web.ports.PlaygroundHistory.claim_pending_commands`)."""
        return await self._history.claim_pending_commands(accepted_before)

    async def settle(self, message_id: str) -> None:
        """Mark a command's message as handled."""
        await self._history.settle_playground_message(message_id)

    async def image(self, key: str) -> StoredFile | None:
        """The image kept under ``key``, if a message still shows it."""
        found = await self._history.playground_image(key)
        return None if found is None else _file(found)

    async def session_key(self) -> bytes:
        """The key that signs the playground's session cookies (the same for every process)."""
        return await self._history.playground_session_key()

    async def fetch(
        self, message_id: str, *, with_images: bool = True
    ) -> tuple[WebMessage, dict[str, StoredFile]] | None:
        """A message another process saved, with its images (unless ``with_images`` is False:
        :meth:`image` reads one when it is wanted); None when it is gone."""
        found = await self._history.playground_message(message_id, with_images=with_images)
        if found is None:
            return None
        message, images = found
        shown = restored(dict(message.body), message.pending, message.version)
        return shown, {i.key: _file(i) for i in images}

    async def keyed(self, channel: str, thread: str | None, key: str) -> WebMessage | None:
        """The message another process saved in ``channel`` (``thread``) with ``key``, without
        its images, or None."""
        found = await self._history.playground_keyed(channel, thread, key)
        return None if found is None else restored(dict(found.body), found.pending, found.version)

    async def fetch_saved(self, message_ids: list[str]) -> list[WebMessage]:
        """Messages other processes saved, without their images (:meth:`image` reads one when
        it is wanted), in the order of ``message_ids``, each once; those gone are left out."""
        wanted = list(dict.fromkeys(message_ids))
        found = {m.id: m for m in await self._history.playground_messages(wanted)}
        return [
            restored(dict(m.body), m.pending, m.version)
            for m in (found.get(message_id) for message_id in wanted)
            if m is not None
        ]

    async def updates(self) -> AsyncIterator[Notice | Forgotten | None]:
        """None once following has started, then the notices of the messages other processes
        save and of the users they forget, as they come (see
        :meth:`~adapters.web.ports.PlaygroundHistory.playground_updates`)."""
        async for update in self._history.playground_updates():
            yield None if update is None else Forgotten.read(*update) or Notice.read(*update)

    async def import_file(self, path: Path) -> int:
        """Bring an earlier genbot's history file into the storage (once: the file is renamed
        ``….imported`` afterwards); how many messages it held (0 when there is no file)."""
        legacy = await asyncio.to_thread(_read_legacy, path)
        if legacy is None:
            return 0
        messages, images = legacy
        for start in range(0, len(messages), IMPORT_TOGETHER):
            await asyncio.gather(
                *(
                    self._history.save_playground_message(
                        message,
                        [images[key] for key in message.image_keys if key in images],
                        keep=self._keep,
                    )
                    for message in messages[start : start + IMPORT_TOGETHER]
                )
            )
        await asyncio.to_thread(path.rename, path.with_name(path.name + ".imported"))
        return len(messages)


def _read_legacy(
    path: Path,
) -> tuple[list[MessageToSave], dict[str, ImageToSave]] | None:
    if not path.is_file():
        return None
    conn = sqlite3.connect(path)
    try:
        messages = [
            MessageToSave(
                message_id, channel, bool(pending), tuple(json.loads(keys)), json.loads(body)
            )
            for message_id, channel, pending, keys, body in conn.execute(LEGACY_MESSAGES)
        ]
        images = {
            row[0]: ImageToSave(row[0], row[1], row[2], row[3], row[4], bytes(row[5]))
            for row in conn.execute(LEGACY_IMAGES)
        }
    finally:
        conn.close()
    return messages, images
