"""The playground's messages and images on PostgreSQL, shared by every process: a save is
announced with ``NOTIFY`` so the other processes show it to their browsers too."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final

import psycopg
from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from storage.errors import StorageError
from storage.postgres.base import Connection, PostgresBase, Query
from storage.records import PlaygroundImage, PlaygroundMessage
from storage.rules import newest_images

CHANNEL: Final = "genbot_playground"
SQL_SAVE: Final[Query] = (
    "INSERT INTO playground_messages AS m (id, channel, pending, image_keys, body, owner)"
    " VALUES (%s, %s, %s, %s, %s, CASE WHEN %s THEN %s END) ON CONFLICT (id) DO UPDATE SET"
    " pending = excluded.pending, image_keys = excluded.image_keys, body = excluded.body,"
    " version = m.version + 1 RETURNING version"
)
SQL_ALIVE: Final[Query] = (
    "INSERT INTO processes (id, host, pid, started_at, seen_at) VALUES (%s, '', 0, %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at"
)
SQL_ANSWERED: Final[Query] = (
    "UPDATE playground_messages SET pending = false WHERE id = %s AND pending"
)
SQL_CLAIM_PENDING: Final[Query] = (
    "UPDATE playground_messages SET owner = %s WHERE pending"
    " AND (body->>'created')::double precision < %s AND (owner IS NULL OR owner = %s"
    " OR owner NOT IN (SELECT id FROM processes WHERE seen_at >= %s)) RETURNING id"
)
SQL_SAVE_IMAGE: Final[Query] = (
    "INSERT INTO playground_images (key, filename, content_type, width, height, data)"
    " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO NOTHING"
)
SQL_TRIM: Final[Query] = (
    "DELETE FROM playground_messages WHERE channel = %s AND seq <= (SELECT seq FROM"
    " playground_messages WHERE channel = %s ORDER BY seq DESC LIMIT 1 OFFSET %s)"
)
SQL_SWEEP_IMAGES: Final[Query] = (
    "DELETE FROM playground_images WHERE key NOT IN"
    " (SELECT jsonb_array_elements_text(image_keys) FROM playground_messages)"
)
SQL_LOAD: Final[Query] = (
    "SELECT id, channel, pending, image_keys, body, version FROM (SELECT *, ROW_NUMBER() OVER"
    " (PARTITION BY channel ORDER BY seq DESC) AS n FROM playground_messages) AS latest"
    " WHERE n <= %s ORDER BY seq"
)
SQL_ONE: Final[Query] = (
    "SELECT id, channel, pending, image_keys, body, version FROM playground_messages WHERE id = %s"
)
SQL_IMAGE_SIZES: Final[Query] = "SELECT key, length(data) AS size FROM playground_images"
SQL_IMAGES_BY_KEY: Final[Query] = (
    "SELECT key, filename, content_type, width, height, data FROM playground_images"
    " WHERE key = ANY(%s)"
)
SQL_KEY: Final[Query] = (
    "INSERT INTO playground_meta (name, value) VALUES ('session_key', %s)"
    " ON CONFLICT (name) DO NOTHING"
)


def _message(row: dict[str, Any]) -> PlaygroundMessage:
    return PlaygroundMessage(
        row["id"],
        row["channel"],
        row["pending"],
        tuple(row["image_keys"]),
        row["body"],
        row["version"],
    )


def _image(row: dict[str, Any]) -> PlaygroundImage:
    return PlaygroundImage(
        row["key"], row["filename"], row["content_type"], row["width"], row["height"],
        bytes(row["data"]),
    )  # fmt: skip


class PostgresPlayground(PostgresBase):
    """Playground methods of :class:`storage.postgres.PostgresStore`."""

    async def load_playground(
        self, keep: int, *, max_image_bytes: int | None = None
    ) -> tuple[list[PlaygroundMessage], list[PlaygroundImage]]:
        """Each channel's ``keep`` latest messages, oldest first, and the images of the newest
        that fit in ``max_image_bytes``."""
        messages = [_message(row) for row in await self._fetch_all(SQL_LOAD, (keep,))]
        sizes = {row["key"]: row["size"] for row in await self._fetch_all(SQL_IMAGE_SIZES)}
        wanted = newest_images(messages, sizes, max_image_bytes)
        rows = await self._fetch_all(SQL_IMAGES_BY_KEY, (wanted,)) if wanted else []
        order = {key: n for n, key in enumerate(wanted)}
        return messages, sorted((_image(row) for row in rows), key=lambda i: order[i.key])

    async def save_playground_message(
        self, message: PlaygroundMessage, images: Sequence[PlaygroundImage], *, keep: int
    ) -> int:
        """Store a message and its images, trim, sweep, and tell the other processes (the
        notification leaves at commit); the version saved. Saving again does no harm, so a
        save whose connection was lost runs once more on a fresh one."""
        row = (
            message.id,
            message.channel,
            message.pending,
            Jsonb(sorted(message.image_keys)),
            Jsonb(dict(message.body)),
            message.pending,
            self._process_id,
        )
        shown = [(i.key, i.filename, i.content_type, i.width, i.height, i.data) for i in images]

        async def work(conn: Connection) -> int:
            if shown:
                async with conn.cursor() as cursor:
                    await cursor.executemany(SQL_SAVE_IMAGE, shown)
            saved = await (await conn.execute(SQL_SAVE, row)).fetchone()
            if message.answers is not None:
                await conn.execute(SQL_ANSWERED, (message.answers,))
            trimmed = await conn.execute(SQL_TRIM, (message.channel, message.channel, keep))
            if trimmed.rowcount:
                await conn.execute(SQL_SWEEP_IMAGES)
            await conn.execute(
                "SELECT pg_notify(%s, %s)", (CHANNEL, f"{self._process_id} {message.id}")
            )
            assert saved is not None
            return int(saved["version"])

        return await self._attempt(work, transaction=True)

    async def settle_playground_message(self, message_id: str) -> None:
        """Mark a command's message as handled."""
        await self._execute(
            "UPDATE playground_messages SET pending = false WHERE id = %s", (message_id,)
        )

    async def claim_pending_commands(self, accepted_before: float) -> list[str]:
        """Take the commands waiting for a handler that nobody alive is handling (see
        ``PlaygroundHistory.claim_pending_commands``). The claimer is recorded as alive with
        its claim (a process claims before its first heartbeat), so no other process takes
        what it just took."""
        now = self._now()
        values = (self._process_id, accepted_before, self._process_id, now - self._lease_seconds)

        async def work(conn: Connection) -> list[str]:
            await conn.execute(SQL_ALIVE, (self._process_id, now, now))
            cursor = await conn.execute(SQL_CLAIM_PENDING, values)
            return [str(row["id"]) for row in await cursor.fetchall()]

        return await self._attempt(work, transaction=True)

    async def playground_message(
        self, message_id: str, *, with_images: bool = True
    ) -> tuple[PlaygroundMessage, list[PlaygroundImage]] | None:
        """One stored message and the images it shows (with ``with_images``), or None."""
        row = await self._fetch_one(SQL_ONE, (message_id,))
        if row is None:
            return None
        message = _message(row)
        if not with_images:
            return message, []
        rows = await self._fetch_all(SQL_IMAGES_BY_KEY, (list(message.image_keys),))
        return message, [_image(found) for found in rows]

    async def playground_image(self, key: str) -> PlaygroundImage | None:
        """One stored image, or None."""
        rows = await self._fetch_all(SQL_IMAGES_BY_KEY, ([key],))
        return _image(rows[0]) if rows else None

    async def playground_session_key(self) -> bytes:
        """The session-cookie key, made on first use, the same for every process."""
        async with self._transaction() as conn:
            await conn.execute(SQL_KEY, (secrets.token_hex(32),))
            cursor = await conn.execute(
                "SELECT value FROM playground_meta WHERE name = 'session_key'"
            )
            row = await cursor.fetchone()
        assert row is not None
        return bytes.fromhex(row["value"])

    async def playground_updates(self) -> AsyncIterator[str | None]:
        """``LISTEN`` for saves, yield None once listening, then the ids of those other
        processes make."""
        try:
            conn = await AsyncConnection.connect(self._url, autocommit=True, connect_timeout=10)
        except psycopg.Error as error:
            raise StorageError(f"cannot follow the playground ({self.where}): {error}") from error
        try:
            await conn.execute(f"LISTEN {CHANNEL}")
            yield None
            async for notice in conn.notifies():
                origin, _, message_id = notice.payload.partition(" ")
                if origin != self._process_id and message_id:
                    yield message_id
        except psycopg.Error as error:
            raise StorageError(
                f"following the playground stopped ({self.where}): {error}"
            ) from error
        finally:
            await conn.close()
