"""The worker-thread core of :class:`storage.sqlite.SqliteStore`.

One dedicated thread owns the SQLite connection: every call is handed to it with
``loop.run_in_executor``, so the event loop never blocks on SQLite, sqlite3's thread affinity
holds, and writes are serialized. Each write commits before its coroutine returns. With a
``statement_timeout``, a call still running after that many seconds is interrupted (SQLite's
progress handler) and fails.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from sqlite_utils import Database

from storage.errors import StorageError, StoreClosedError

T = TypeVar("T")
PROGRESS_STEPS = 1000
"""SQLite virtual machine steps between two looks at the call's deadline."""

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
        statement_timeout: float | None = None,
    ) -> None:
        self.path = path
        self._executor = executor
        self._db = db
        self._clock = clock
        self._closed = False
        self._process_id = process_id
        self._lease_seconds = lease_seconds
        self._statement_timeout = statement_timeout or None
        self._deadline: float | None = None

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
        if self._statement_timeout is not None:
            self._deadline = time.monotonic() + self._statement_timeout
        try:
            return work(self._db)
        except sqlite3.OperationalError as error:
            if self._deadline is not None and time.monotonic() > self._deadline:
                raise StorageError(
                    f"a database call took longer than {self._statement_timeout:g} s "
                    "([storage] statement_timeout)"
                ) from error
            raise StorageError(f"database error: {error}") from error
        except sqlite3.Error as error:
            raise StorageError(f"database error: {error}") from error
        finally:
            self._deadline = None

    def _watch_deadline(self, db: Database) -> None:
        """Let SQLite interrupt a call past its deadline (run on the worker thread)."""
        db.conn.set_progress_handler(self._past_deadline, PROGRESS_STEPS)

    def _past_deadline(self) -> int:
        deadline = self._deadline
        return 1 if deadline is not None and time.monotonic() > deadline else 0

    async def run_in_worker(self, work: Callable[[Database], T]) -> T:
        """Run ``work(db)`` on the store's worker thread with its ``sqlite_utils.Database``.

        An escape hatch for benchmarks, diagnostics and tests (``EXPLAIN QUERY PLAN``, tracing);
        engines use the typed methods. ``work`` must not keep a transaction open.
        """
        return await self._call(work)
