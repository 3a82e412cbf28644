"""The worker-thread core of :class:`storage.sqlite.SqliteStore`.

One dedicated thread owns the SQLite connection: every call is handed to it with
``loop.run_in_executor``, so the event loop never blocks on SQLite, sqlite3's thread affinity
holds, and writes are serialized. Each write commits before its coroutine returns.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from sqlite_utils import Database

from storage.errors import StorageError, StoreClosedError

T = TypeVar("T")

Clock = Callable[[], float]


class StoreBase:
    """Holds the connection, the worker thread and the clock (see :class:`SqliteStore`)."""

    def __init__(
        self,
        path: Path,
        executor: ThreadPoolExecutor,
        db: Database,
        clock: Clock,
        *,
        process_id: str,
        lease_seconds: float,
    ) -> None:
        self.path = path
        self._executor = executor
        self._db = db
        self._clock = clock
        self._closed = False
        self._process_id = process_id
        self._lease_seconds = lease_seconds

    @property
    def process_id(self) -> str:
        """This process's identity as an owner of jobs."""
        return self._process_id

    @property
    def lease_seconds(self) -> float:
        """How long a lease lasts without a heartbeat."""
        return self._lease_seconds

    @property
    def closed(self) -> bool:
        """True once :meth:`SqliteStore.close` was called."""
        return self._closed

    def _now(self) -> float:
        return self._clock()

    async def _call(self, work: Callable[[Database], T]) -> T:
        """Run ``work(db)`` on the worker thread. A call whose awaiting task is cancelled still
        runs to completion (and commits) on the worker; only the result is dropped."""
        if self._closed:
            raise StoreClosedError("the store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._guarded, work)

    def _guarded(self, work: Callable[[Database], T]) -> T:
        try:
            return work(self._db)
        except sqlite3.Error as error:
            raise StorageError(f"database error: {error}") from error

    async def run_in_worker(self, work: Callable[[Database], T]) -> T:
        """Run ``work(db)`` on the store's worker thread with its ``sqlite_utils.Database``.

        An escape hatch for benchmarks, diagnostics and tests (``EXPLAIN QUERY PLAN``, tracing);
        engines use the typed methods. ``work`` must not keep a transaction open.
        """
        return await self._call(work)
