"""The :class:`SqliteStore`: genbot's storage in one SQLite file (the default backend)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, Unpack

from sqlite_utils import Database

from storage.queries.base import Identity
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
        busy_timeout: float = 5.0,
        statement_timeout: float | None = None,
        **identity: Unpack[Identity],
    ) -> SqliteStore:
        """Open (creating if needed) the database at ``path`` with every pending migration
        applied; a statement running longer than ``statement_timeout`` seconds is interrupted
        and fails. ``identity``: see :class:`storage.queries.base.Queries`."""
        database = await SqliteDatabase.open(Path(path), busy_timeout=busy_timeout)
        try:
            await migrate(database, clock=identity.get("clock", time.time))
            await database.time_limit(statement_timeout)
        except BaseException:
            await database.close()
            raise
        return cls(database, **identity)

    @property
    def path(self) -> Path:
        """The database file."""
        return self.db.path

    async def run_in_worker(self, work: Callable[[Database], T]) -> T:
        """``work(db)`` on the worker thread with its ``sqlite_utils.Database``, between other
        statements: an escape hatch for benchmarks, diagnostics and tests; features use the
        typed methods. ``work`` must not keep a transaction open."""
        return await self.db.run(work)
