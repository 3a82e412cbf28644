"""The playground's messages on disk: what a browser shows survives a restart of genbot.

The playground is its own chat platform, so like a platform it keeps what it showed: every
message (with its key, see :attr:`bot.events.OutMessage.key`) and the images it shows are
written to a SQLite file of their own before browsers see them. A command's message is written
before the playground accepts the command and stays ``pending`` until its handler has run, so a
command accepted just before the process died is handled after the restart instead of being
lost. Each channel keeps its latest ``max_messages_per_channel`` messages, as in memory.

One worker thread owns the connection; every call waits for its commit.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sqlite3
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

from sqlite_utils import Database

from adapters.web.messages import StoredFile, WebMessage
from bot.events import Button
from storage.files import private_file

T = TypeVar("T")

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS messages (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        channel TEXT NOT NULL,
        pending INTEGER NOT NULL DEFAULT 0,
        image_keys TEXT NOT NULL DEFAULT '[]',
        body TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS messages_by_channel ON messages (channel, seq)",
    """CREATE TABLE IF NOT EXISTS images (
        key TEXT PRIMARY KEY,
        filename TEXT NOT NULL,
        content_type TEXT NOT NULL,
        width INTEGER,
        height INTEGER,
        data BLOB NOT NULL
    ) WITHOUT ROWID""",
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
)
SQL_SAVE = (
    "INSERT INTO messages (id, channel, pending, image_keys, body) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET"
    " pending = excluded.pending, image_keys = excluded.image_keys, body = excluded.body"
)
SQL_SAVE_IMAGE = (
    "INSERT OR IGNORE INTO images (key, filename, content_type, width, height, data)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
SQL_TRIM = (
    "DELETE FROM messages WHERE channel = ? AND seq <= ("
    " SELECT seq FROM messages WHERE channel = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)"
)
SQL_SWEEP_IMAGES = (
    "DELETE FROM images WHERE key NOT IN"
    " (SELECT value FROM messages, json_each(messages.image_keys))"
)
SQL_LOAD = (
    "SELECT body, pending FROM ("
    " SELECT body, pending, seq, ROW_NUMBER() OVER (PARTITION BY channel ORDER BY seq DESC) AS n"
    " FROM messages) WHERE n <= ? ORDER BY seq"
)


def playground_path(database: Path) -> Path:
    """Where the playground keeps its messages: beside genbot's database
    (``genbot.db`` → ``genbot.playground.db``)."""
    return database.with_name(f"{database.stem}.playground{database.suffix or '.db'}")


def message_record(message: WebMessage) -> dict[str, Any]:
    """Everything about ``message`` but ``pending`` (a column of its own) as JSON-ready values;
    :func:`restored` reads it back."""
    record = {f.name: getattr(message, f.name) for f in fields(WebMessage) if f.name != "pending"}
    record["buttons"] = [
        [[b.label, b.action, b.ref, b.style, b.disabled] for b in row] for row in message.buttons
    ]
    return record


def restored(record: dict[str, Any], pending: bool) -> WebMessage:
    """The message saved as ``record``."""
    buttons = tuple(tuple(Button(*saved) for saved in row) for row in record["buttons"])
    return WebMessage(**{**record, "buttons": buttons, "pending": pending})


@dataclass(frozen=True)
class Saved:
    """What the journal holds: messages (oldest first, each channel's latest) and their images."""

    messages: list[WebMessage]
    images: dict[str, StoredFile]


class PlaygroundJournal:
    """The playground's SQLite file; open with :meth:`open`, close with :meth:`close`."""

    def __init__(self, db: Database, executor: ThreadPoolExecutor, keep: int) -> None:
        self._db = db
        self._executor = executor
        self._keep = keep
        self._closed = False

    @classmethod
    async def open(cls, path: Path, max_messages_per_channel: int = 500) -> PlaygroundJournal:
        """Open (or create) the journal at ``path``."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="genbot-playground")

        def connect() -> Database:
            private_file(path)
            conn = sqlite3.connect(str(path), timeout=10.0, isolation_level=None)
            db = Database(conn, execute_plugins=False)
            db.enable_wal()
            db.execute("PRAGMA synchronous = NORMAL")
            for statement in SCHEMA:
                db.execute(statement)
            return db

        try:
            db = await asyncio.get_running_loop().run_in_executor(executor, connect)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(db, executor, max_messages_per_channel)

    async def close(self) -> None:
        """Close the file once the writes under way are done."""
        if self._closed:
            return
        self._closed = True
        await asyncio.get_running_loop().run_in_executor(self._executor, self._db.conn.close)
        self._executor.shutdown(wait=False)

    async def load(self) -> Saved:
        """Each channel's latest messages and the images they show."""

        def work(db: Database) -> Saved:
            rows = db.conn.execute(SQL_LOAD, (self._keep,)).fetchall()
            messages = [restored(json.loads(body), bool(pending)) for body, pending in rows]
            images: dict[str, StoredFile] = {}
            for key, filename, content_type, width, height, data in db.conn.execute(
                "SELECT key, filename, content_type, width, height, data FROM images"
            ):
                images[key] = StoredFile(filename, data, content_type, "", width, height)
            return Saved(messages, images)

        return await self._call(work)

    async def save(self, message: WebMessage, images: Iterable[tuple[str, StoredFile]]) -> None:
        """Write ``message`` (new or changed) and the images it shows (each image once, as
        other messages may show it too); the channel's oldest messages beyond the cap, and
        images no message shows any more, go."""
        shown = list(images)
        body = json.dumps(message_record(message), separators=(",", ":"))
        keys = json.dumps(sorted(message.image_keys()))
        row = (message.id, message.channel, int(message.pending), keys, body)

        def work(db: Database) -> None:
            with db.conn:
                db.conn.execute("BEGIN IMMEDIATE")
                for key, f in shown:
                    db.conn.execute(
                        SQL_SAVE_IMAGE, (key, f.filename, f.content_type, f.width, f.height, f.data)
                    )
                db.conn.execute(SQL_SAVE, row)
                trimmed = db.conn.execute(
                    SQL_TRIM, (message.channel, message.channel, self._keep)
                ).rowcount
                if trimmed:
                    db.conn.execute(SQL_SWEEP_IMAGES)

        await self._call(work)

    async def image(self, key: str) -> StoredFile | None:
        """The image kept under ``key``, if a message still shows it."""

        def work(db: Database) -> StoredFile | None:
            row = db.conn.execute(
                "SELECT filename, content_type, width, height, data FROM images WHERE key = ?",
                (key,),
            ).fetchone()
            if row is None:
                return None
            filename, content_type, width, height, data = row
            return StoredFile(filename, data, content_type, "", width, height)

        return await self._call(work)

    async def session_key(self) -> bytes:
        """The key that signs the playground's session cookies (made on first use), so
        browsers keep their identity across restarts."""

        def work(db: Database) -> bytes:
            db.conn.execute(
                "INSERT OR IGNORE INTO meta (name, value) VALUES ('session_key', ?)",
                (secrets.token_hex(32),),
            )
            row = db.conn.execute("SELECT value FROM meta WHERE name = 'session_key'").fetchone()
            return bytes.fromhex(row[0])

        return await self._call(work)

    async def settle(self, message_id: str) -> None:
        """Mark a command's message as handled."""

        def work(db: Database) -> None:
            db.conn.execute("UPDATE messages SET pending = 0 WHERE id = ?", (message_id,))

        await self._call(work)

    async def _call(self, work: Callable[[Database], T]) -> T:
        if self._closed:
            raise RuntimeError("the playground's history file is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, work, self._db)
