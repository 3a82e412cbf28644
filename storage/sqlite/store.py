"""The :class:`SqliteStore`: genbot's storage in one SQLite file (the default backend)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Final

from sqlite_utils import Database

from storage.errors import StorageError
from storage.files import private_file
from storage.process import DEFAULT_LEASE_SECONDS, new_process_id
from storage.sqlite.admission import SqliteJobAdmission
from storage.sqlite.base import Clock
from storage.sqlite.conversations import SqliteConversations
from storage.sqlite.events import SqliteEventDedupe
from storage.sqlite.history import SqliteJobHistory
from storage.sqlite.job_messages import SqliteMessageLinks
from storage.sqlite.jobs import SqliteJobs
from storage.sqlite.leasing import SqliteJobLeasing
from storage.sqlite.ledger import SqliteLedger
from storage.sqlite.locks import SqliteConversationLocks
from storage.sqlite.playground import SqlitePlayground
from storage.sqlite.schema import current_version, migrate
from storage.sqlite.scopes import SqliteSettings
from storage.sqlite.slack import SqliteSlackInstallations
from storage.sqlite.sql import write_transaction
from storage.sqlite.tracking import SqliteJobTracking
from storage.sqlite.writes import SqliteWriteBudgets

WORKER_THREAD_PREFIX = "genbot-storage"
SQL_PROBE: Final = (
    "INSERT INTO storage_probes (process_id, probed_at) VALUES (?, ?)"
    " ON CONFLICT (process_id) DO UPDATE SET probed_at = excluded.probed_at"
)


def _connect(path: Path, busy_timeout: float, clock: Clock) -> Database:
    if str(path) != ":memory:":
        private_file(path)
    conn = sqlite3.connect(str(path), timeout=busy_timeout, isolation_level=None)
    try:
        db = Database(conn, execute_plugins=False)
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        db.execute("PRAGMA foreign_keys = ON")
        db.enable_wal()
        db.execute("PRAGMA synchronous = NORMAL")
        migrate(db, clock=clock)
    except BaseException:
        conn.close()
        raise
    return db


class SqliteStore(
    SqliteConversations,
    SqliteJobs,
    SqliteJobAdmission,
    SqliteJobTracking,
    SqliteJobLeasing,
    SqliteConversationLocks,
    SqlitePlayground,
    SqliteWriteBudgets,
    SqliteMessageLinks,
    SqliteSettings,
    SqliteLedger,
    SqliteEventDedupe,
    SqliteSlackInstallations,
    SqliteJobHistory,
):
    """genbot's storage in one SQLite file: every interface of :mod:`storage.interfaces`.

    Open with ``store = await SqliteStore.open(path)``; close with ``await store.close()`` (or
    use ``async with await SqliteStore.open(path) as store``). Every method is a coroutine that
    runs on the store's single worker thread and, for writes, returns only after the commit.
    Failures raise :class:`storage.StorageError`.
    """

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        clock: Clock = time.time,
        busy_timeout: float = 5.0,
        event_retention: float = 24 * 3600.0,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        process_id: str | None = None,
        statement_timeout: float | None = None,
    ) -> SqliteStore:
        """Open (creating if needed) the database at ``path``: WAL journal,
        ``synchronous=NORMAL``, foreign keys on, ``busy_timeout`` seconds of waiting for
        another connection's lock, and every pending migration applied. ``clock`` gives
        timestamps (Unix seconds); ``event_retention`` is how long inbound event ids are
        remembered; jobs this handle creates or claims are leased to ``process_id`` (a fresh
        one by default) for ``lease_seconds``. With ``statement_timeout`` (seconds), a call
        running longer is interrupted and fails."""
        db_path = Path(path)
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=WORKER_THREAD_PREFIX)
        loop = asyncio.get_running_loop()
        try:
            db = await loop.run_in_executor(executor, _connect, db_path, busy_timeout, clock)
        except sqlite3.Error as error:
            executor.shutdown(wait=False)
            raise StorageError(f"cannot open database {db_path}: {error}") from error
        except BaseException:
            executor.shutdown(wait=False)
            raise
        store = cls(
            db_path,
            executor,
            db,
            clock,
            process_id=process_id or new_process_id(),
            lease_seconds=lease_seconds,
            statement_timeout=statement_timeout,
        )
        store.event_retention = event_retention
        if statement_timeout:
            await store._call(store._watch_deadline)
        return store

    async def close(self) -> None:
        """Finish the calls already queued, then close the connection and the worker thread.
        Closing twice is harmless; any call after closing raises ``StoreClosedError``."""
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        self._closed = True
        try:
            await loop.run_in_executor(self._executor, self._db.close)
        finally:
            self._executor.shutdown(wait=True)

    async def __aenter__(self) -> SqliteStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def schema_version(self) -> int:
        """The database's schema version (the latest, once open)."""
        return await self._call(current_version)

    async def probe_write(self) -> None:
        """Upsert this process's probe row (see :meth:`storage.Storage.probe_write`)."""

        def work(db: Database) -> None:
            with write_transaction(db):
                db.conn.execute(SQL_PROBE, (self._process_id, self._now()))

        await self._call(work)
