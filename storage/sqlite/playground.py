"""The playground's messages and images on SQLite (one process: no one else to tell)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final

from sqlite_utils import Database

from storage.records import PlaygroundImage, PlaygroundMessage
from storage.rows import from_json, to_json
from storage.rules import newest_images
from storage.sqlite.base import StoreBase
from storage.sqlite.sql import placeholders, write_transaction

SQL_SAVE: Final = (
    "INSERT INTO playground_messages (id, channel, pending, image_keys, body, owner)"
    " VALUES (?, ?, ?, ?, ?, CASE WHEN ? THEN ? END) ON CONFLICT (id) DO UPDATE SET"
    " pending = excluded.pending, image_keys = excluded.image_keys, body = excluded.body,"
    " version = playground_messages.version + 1 RETURNING version"
)
SQL_ANSWERED: Final = "UPDATE playground_messages SET pending = 0 WHERE id = ? AND pending"
SQL_CLAIM_PENDING: Final = (
    "UPDATE playground_messages SET owner = ? WHERE pending"
    " AND json_extract(body, '$.created') < ? RETURNING id"
)
SQL_SAVE_IMAGE: Final = (
    "INSERT OR IGNORE INTO playground_images (key, filename, content_type, width, height, data)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
SQL_TRIM: Final = (
    "DELETE FROM playground_messages WHERE channel = ? AND seq <= (SELECT seq FROM"
    " playground_messages WHERE channel = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)"
)
SQL_SWEEP_IMAGES: Final = (
    "DELETE FROM playground_images WHERE key NOT IN"
    " (SELECT value FROM playground_messages, json_each(playground_messages.image_keys))"
)
SQL_LOAD: Final = (
    "SELECT id, channel, pending, image_keys, body, version FROM (SELECT *, ROW_NUMBER() OVER"
    " (PARTITION BY channel ORDER BY seq DESC) AS n FROM playground_messages)"
    " WHERE n <= ? ORDER BY seq"
)
SQL_ONE: Final = (
    "SELECT id, channel, pending, image_keys, body, version FROM playground_messages WHERE id = ?"
)
SQL_IMAGES: Final = "SELECT key, filename, content_type, width, height, data FROM playground_images"
SQL_IMAGE_SIZES: Final = "SELECT key, length(data) FROM playground_images"
IMAGES_PER_QUERY: Final = 500


def message_from(row: tuple[Any, ...]) -> PlaygroundMessage:
    message_id, channel, pending, keys, body, version = row
    return PlaygroundMessage(
        message_id,
        channel,
        bool(pending),
        tuple(from_json(keys, [])),
        from_json(body, {}),
        version,
    )


def image_from(row: tuple[Any, ...]) -> PlaygroundImage:
    return PlaygroundImage(row[0], row[1], row[2], row[3], row[4], bytes(row[5]))


class SqlitePlayground(StoreBase):
    """Playground methods of :class:`storage.sqlite.SqliteStore`."""

    async def load_playground(
        self, keep: int, *, max_image_bytes: int | None = None
    ) -> tuple[list[PlaygroundMessage], list[PlaygroundImage]]:
        """Each channel's ``keep`` latest messages, oldest first, and the images of the newest
        that fit in ``max_image_bytes``."""

        def work(db: Database) -> tuple[list[PlaygroundMessage], list[PlaygroundImage]]:
            messages = [message_from(row) for row in db.conn.execute(SQL_LOAD, (keep,))]
            sizes = dict(db.conn.execute(SQL_IMAGE_SIZES).fetchall())
            wanted = newest_images(messages, sizes, max_image_bytes)
            images: list[PlaygroundImage] = []
            for start in range(0, len(wanted), IMAGES_PER_QUERY):
                chunk = wanted[start : start + IMAGES_PER_QUERY]
                where = f" WHERE key IN ({placeholders(len(chunk))})"
                images.extend(image_from(row) for row in db.conn.execute(SQL_IMAGES + where, chunk))
            order = {key: n for n, key in enumerate(wanted)}
            return messages, sorted(images, key=lambda image: order[image.key])

        return await self._call(work)

    async def save_playground_message(
        self, message: PlaygroundMessage, images: Sequence[PlaygroundImage], *, keep: int
    ) -> int:
        """Store a message and its images; trim the channel to ``keep`` and sweep images; the
        version saved."""
        row = (
            message.id,
            message.channel,
            int(message.pending),
            to_json(sorted(message.image_keys)),
            to_json(dict(message.body)),
            int(message.pending),
            self._process_id,
        )
        shown = [(i.key, i.filename, i.content_type, i.width, i.height, i.data) for i in images]

        def work(db: Database) -> int:
            with write_transaction(db):
                db.conn.executemany(SQL_SAVE_IMAGE, shown)
                version = int(db.conn.execute(SQL_SAVE, row).fetchone()[0])
                if message.answers is not None:
                    db.conn.execute(SQL_ANSWERED, (message.answers,))
                trimmed = db.conn.execute(SQL_TRIM, (message.channel, message.channel, keep))
                if trimmed.rowcount:
                    db.conn.execute(SQL_SWEEP_IMAGES)
            return version

        return await self._call(work)

    async def claim_pending_commands(self, accepted_before: float) -> list[str]:
        """Every command accepted before ``accepted_before`` that still waits for a handler:
        the database has one process, which takes them all."""

        def work(db: Database) -> list[str]:
            with write_transaction(db):
                rows = db.conn.execute(
                    SQL_CLAIM_PENDING, (self._process_id, accepted_before)
                ).fetchall()
            return [str(row[0]) for row in rows]

        return await self._call(work)

    async def settle_playground_message(self, message_id: str) -> None:
        """Mark a command's message as handled."""

        def work(db: Database) -> None:
            with write_transaction(db):
                db.conn.execute(
                    "UPDATE playground_messages SET pending = 0 WHERE id = ?", (message_id,)
                )

        await self._call(work)

    async def playground_message(
        self, message_id: str, *, with_images: bool = True
    ) -> tuple[PlaygroundMessage, list[PlaygroundImage]] | None:
        """One stored message and the images it shows (with ``with_images``), or None."""

        def work(db: Database) -> tuple[PlaygroundMessage, list[PlaygroundImage]] | None:
            row = db.conn.execute(SQL_ONE, (message_id,)).fetchone()
            if row is None:
                return None
            message = message_from(row)
            keys = list(message.image_keys) if with_images else []
            images = [
                image_from(found)
                for found in db.conn.execute(
                    SQL_IMAGES + f" WHERE key IN ({', '.join('?' * len(keys))})", keys
                )
            ] if keys else []  # fmt: skip
            return message, images

        return await self._call(work)

    async def playground_image(self, key: str) -> PlaygroundImage | None:
        """One stored image, or None."""

        def work(db: Database) -> PlaygroundImage | None:
            row = db.conn.execute(SQL_IMAGES + " WHERE key = ?", (key,)).fetchone()
            return None if row is None else image_from(row)

        return await self._call(work)

    async def playground_session_key(self) -> bytes:
        """The session-cookie key, made on first use."""

        def work(db: Database) -> bytes:
            with write_transaction(db):
                db.conn.execute(
                    "INSERT OR IGNORE INTO playground_meta (name, value) VALUES ('session_key', ?)",
                    (secrets.token_hex(32),),
                )
                row = db.conn.execute(
                    "SELECT value FROM playground_meta WHERE name = 'session_key'"
                ).fetchone()
            return bytes.fromhex(row[0])

        return await self._call(work)

    async def playground_updates(self) -> AsyncIterator[str | None]:
        """Only the start: no other process shares this database."""
        yield None
