"""The :class:`SqliteStore`: genbot's storage in one SQLite file (the default backend)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from sqlite_utils import Database

from storage.process import DEFAULT_LEASE_SECONDS, new_process_id
from storage.queries.base import Clock
from storage.sql.migrations import migrate
from storage.sqlite.database import WORKER_THREAD_PREFIX, SqliteDatabase
from storage.store import Store

T = TypeVar("T")

__all__ = ["WORKER_THREAD_PREFIX", "SqliteStore"]


class SqliteStore(Store):
    """:class:`storage.Store` on one SQLite file (see :mod:`storage.sqlite.database`)."""

    db: SqliteDatabase

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
        """Open (creating if needed) the database at ``path`` with every pending migration
        applied. ``clock`` gives timestamps (Unix seconds); ``event_retention`` is how long
        inbound event ids are remembered; jobs this handle creates or claims are leased to
        ``process_id`` (a fresh one by default) for ``lease_seconds``; a statement running
        longer than ``statement_timeout`` seconds is interrupted and fails."""
        database = await SqliteDatabase.open(Path(path), busy_timeout=busy_timeout)
        try:
            await migrate(database, clock=clock)
            await database.time_limit(statement_timeout)
        except BaseException:
            await database.close()
            raise
        return cls(
            database,
            clock,
            process_id=process_id or new_process_id(),
            lease_seconds=lease_seconds,
            event_retention=event_retention,
        )

    @property
    def path(self) -> Path:
        """The database file."""
        return self.db.path

    async def run_in_worker(self, work: Callable[[Database], T]) -> T:
        """``work(db)`` on the worker thread with its ``sqlite_utils.Database``, between other
        statements: an escape hatch for benchmarks, diagnostics and tests (``EXPLAIN QUERY
        PLAN``, tracing); features use the typed methods. ``work`` must not keep a transaction
        open."""
        return await self.db.run(work)
