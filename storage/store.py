"""The :class:`Store`: genbot's one async entry point to its SQLite database."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlite_utils import Database

from storage.admission import JobAdmissionStore
from storage.base import Clock
from storage.conversations import ConversationStore
from storage.errors import StorageError
from storage.files import private_file
from storage.job_messages import JobMessageStore
from storage.jobs import SQL_INSERT_JOB, JobStore, check_new_job, insert_job_links, insert_values
from storage.ledger import LedgerStore
from storage.records import JobMessage, NewJob, new_job_id
from storage.schema import current_version, migrate
from storage.scopes import SettingsStore
from storage.sql import write_transaction
from storage.tracking import JobQueryStore

WORKER_THREAD_PREFIX = "genbot-storage"


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


def _batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


class Store(
    ConversationStore,
    JobStore,
    JobAdmissionStore,
    JobQueryStore,
    JobMessageStore,
    SettingsStore,
    LedgerStore,
):
    """genbot's storage: conversations, jobs, message links, settings, usage, event dedup.

    Open with ``store = await Store.open(path)``; close with ``await store.close()`` (or use
    ``async with await Store.open(path) as store``). Every method is a coroutine that runs on
    the store's single worker thread and, for writes, returns only after the commit.
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
    ) -> Store:
        """Open (creating if needed) the database at ``path``: WAL journal,
        ``synchronous=NORMAL``, foreign keys on, ``busy_timeout`` seconds of waiting for
        another connection's lock, and every pending migration applied. ``clock`` gives
        timestamps (Unix seconds); ``event_retention`` is how long inbound event ids are
        remembered."""
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
        store = cls(db_path, executor, db, clock)
        store.event_retention = event_retention
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

    async def __aenter__(self) -> Store:
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

    async def bulk_insert_jobs(self, jobs: Iterable[NewJob], *, batch_size: int = 10_000) -> int:
        """Insert many jobs fast (benchmarks, imports): one transaction per ``batch_size``
        rows, no per-row checks beyond the schema's. Jobs without an id get a fresh one (ids
        given must be unique). Returns the number inserted."""

        def rows(batch: list[NewJob], now: float) -> Iterator[tuple[Any, ...]]:
            for new in batch:
                check_new_job(new)
                yield insert_values(new, new.id or new_job_id(), now)

        def work(db: Database) -> int:
            inserted = 0
            for batch in _batches(jobs, batch_size):
                with write_transaction(db):
                    db.conn.executemany(SQL_INSERT_JOB, rows(batch, self._now()))
                inserted += len(batch)
            return inserted

        return await self._call(work)

    async def bulk_link_messages(
        self, links: Iterable[JobMessage], *, batch_size: int = 10_000
    ) -> int:
        """Insert many message → job links fast, one transaction per ``batch_size``."""

        def work(db: Database) -> int:
            linked = 0
            for batch in _batches(links, batch_size):
                with write_transaction(db):
                    insert_job_links(db, batch)
                linked += len(batch)
            return linked

        return await self._call(work)
