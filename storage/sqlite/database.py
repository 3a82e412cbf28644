"""genbot's SQLite database: one connection, owned by one worker thread.

Every statement is handed to the thread with ``loop.run_in_executor``, so the event loop never
blocks on SQLite, sqlite3's thread affinity holds and writes are serialised. A transaction is
``BEGIN IMMEDIATE`` (sent with its first statement: the write lock is taken up front, so two
connections never deadlock upgrading theirs) … ``COMMIT``; its statements are awaited one by
one, and an :class:`asyncio.Lock` (the database's turn) keeps every other statement of the
process out until it ends. With a statement timeout, a statement still running after that many
seconds is interrupted (SQLite's progress handler) and fails. A statement whose awaiting task
is cancelled still runs to completion on the worker; a transaction cancelled between its
statements is rolled back.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final, TypeVar

from sqlite_utils import Database as SqliteUtilsDatabase

from storage.errors import StorageError, StoreClosedError
from storage.files import private_file
from storage.sql.dialect import SQLITE
from storage.sql.session import Row, Session, Values

T = TypeVar("T")
WORKER_THREAD_PREFIX: Final = "genbot-storage"
PROGRESS_STEPS: Final = 1000
"""SQLite virtual machine steps between two looks at the statement's deadline."""


def _connect(path: Path, busy_timeout: float, read_only: bool) -> SqliteUtilsDatabase:
    if read_only:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        return SqliteUtilsDatabase(conn, execute_plugins=False)
    if str(path) != ":memory:":
        private_file(path)
    conn = sqlite3.connect(str(path), timeout=busy_timeout, isolation_level=None)
    try:
        db = SqliteUtilsDatabase(conn, execute_plugins=False)
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        db.execute("PRAGMA foreign_keys = ON")
        db.enable_wal()
        db.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        conn.close()
        raise
    return db


class _Statements:
    """Statements on the worker's connection: each in the database's turn, or (``begin``) as
    one transaction whose turn the caller holds."""

    dialect: Final = SQLITE

    def __init__(self, database: SqliteDatabase, *, begin: bool = False) -> None:
        self._database = database
        self._begin = begin
        self.begun = False

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        if not self._begin:
            return await self._database.run(lambda db: work(db.conn))
        if self.begun:
            return await self._database._on_worker(lambda db: work(db.conn))
        self.begun = True
        return await self._database._on_worker(lambda db: _begun(db.conn, work))

    async def fetch_one(
        self, sql: str, values: Values = (), *, repeatable: bool = True
    ) -> Row | None:
        return await self._run(lambda conn: _one(conn, sql, values))

    async def fetch_all(
        self, sql: str, values: Values = (), *, repeatable: bool = True
    ) -> list[Row]:
        return await self._run(lambda conn: _all(conn, sql, values))

    async def execute(self, sql: str, values: Values = (), *, repeatable: bool = False) -> int:
        return await self._run(lambda conn: conn.execute(sql, values).rowcount)

    async def execute_many(self, sql: str, rows: Iterable[Values]) -> int:
        batch = list(rows)
        return await self._run(lambda conn: conn.executemany(sql, batch).rowcount)

    async def execute_each(self, sql: str, rows: Iterable[Values]) -> list[int]:
        batch = list(rows)
        return await self._run(lambda conn: [conn.execute(sql, v).rowcount for v in batch])

    async def fetch_each(
        self, statements: Iterable[tuple[str, Values]], *, repeatable: bool = False
    ) -> list[list[Row]]:
        batch = list(statements)
        return await self._run(lambda conn: [_all(conn, sql, v) for sql, v in batch])


class SqliteDatabase(_Statements):
    """A :class:`storage.sql.session.Database` on one SQLite file (see the module docstring):
    WAL journal, ``synchronous=NORMAL``, foreign keys on, ``busy_timeout`` seconds of waiting
    for another connection's lock."""

    def __init__(self, path: Path, executor: ThreadPoolExecutor, db: SqliteUtilsDatabase) -> None:
        super().__init__(self)
        self.path, self.where, self.closed = path, str(path), False
        self._executor = executor
        self._db = db
        self._statement_timeout: float | None = None
        self._deadline: float | None = None
        self._turn = asyncio.Lock()

    @classmethod
    async def open(
        cls, path: Path, *, busy_timeout: float = 5.0, read_only: bool = False
    ) -> SqliteDatabase:
        """Open (creating if needed, unless ``read_only``) the file at ``path`` on a worker
        thread of its own."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=WORKER_THREAD_PREFIX)
        loop = asyncio.get_running_loop()
        try:
            db = await loop.run_in_executor(executor, _connect, path, busy_timeout, read_only)
        except BaseException as error:
            executor.shutdown(wait=False)
            if isinstance(error, sqlite3.Error):
                raise StorageError(f"cannot open database {path}: {error}") from error
            raise
        return cls(path, executor, db)

    async def time_limit(self, statement_timeout: float | None) -> None:
        """From now on, interrupt a statement still running after ``statement_timeout``
        seconds (None: never)."""
        self._statement_timeout = statement_timeout or None
        if self._statement_timeout is not None:
            watch = self._past_deadline
            await self.run(lambda db: db.conn.set_progress_handler(watch, PROGRESS_STEPS))

    async def run(self, work: Callable[[SqliteUtilsDatabase], T]) -> T:
        """``work(db)`` on the worker thread with its ``sqlite_utils.Database``, in the
        database's turn (never inside a transaction): an escape hatch for benchmarks,
        diagnostics and tests. ``work`` must not leave a transaction open."""
        async with self._turn:
            return await self._on_worker(work)

    async def _on_worker(self, work: Callable[[SqliteUtilsDatabase], T]) -> T:
        if self.closed:
            raise StoreClosedError("the store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._guarded, work)

    def _guarded(self, work: Callable[[SqliteUtilsDatabase], T]) -> T:
        if self._statement_timeout is not None:
            self._deadline = time.monotonic() + self._statement_timeout
        try:
            return work(self._db)
        except sqlite3.Error as error:
            if self._deadline is not None and time.monotonic() > self._deadline:
                raise StorageError(
                    f"a database call took longer than {self._statement_timeout:g} s "
                    "([storage] statement_timeout)"
                ) from error
            raise StorageError(f"database error: {error}") from error
        finally:
            self._deadline = None

    def _past_deadline(self) -> int:
        deadline = self._deadline
        return 1 if deadline is not None and time.monotonic() > deadline else 0

    async def transaction(
        self, work: Callable[[Session], Awaitable[T]], *, repeatable: bool = False
    ) -> T:
        async with self._turn:
            session = _Statements(self, begin=True)
            try:
                done = await work(session)
            except BaseException:
                if session.begun:
                    await asyncio.shield(self._on_worker(_rollback))
                raise
            if session.begun:
                await self._on_worker(lambda db: db.conn.execute("COMMIT"))
            return done

    @asynccontextmanager
    async def lock(self, key: str | int, *, wait: float, name: str) -> AsyncIterator[None]:
        """Nothing to take: no other process shares a SQLite database."""
        yield

    async def listen(self, channel: str) -> AsyncIterator[str | None]:
        """Only the start: no other process shares a SQLite database to send notices."""
        yield None

    async def close(self) -> None:
        """Finish the statements already asked for, then close the connection and the worker
        thread; any statement after raises :class:`StoreClosedError`."""
        async with self._turn:
            if self.closed:
                return
            self.closed = True
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._db.close)
        finally:
            self._executor.shutdown(wait=True)


def _begun(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    return work(conn)


def _rollback(db: SqliteUtilsDatabase) -> None:
    if db.conn.in_transaction:
        db.conn.execute("ROLLBACK")


def _one(conn: sqlite3.Connection, sql: str, values: Values) -> Row | None:
    found = _all(conn, sql, values)
    return found[0] if found else None


def _all(conn: sqlite3.Connection, sql: str, values: Values) -> list[Row]:
    cursor = conn.execute(sql, values)
    if cursor.description is None:
        return []
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, found, strict=True)) for found in cursor.fetchall()]
