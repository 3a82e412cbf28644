"""The :class:`PostgresStore`: genbot's storage on PostgreSQL, shared by many processes."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Final

import psycopg
from psycopg import AsyncConnection
from psycopg.rows import dict_row

from storage.errors import StorageError
from storage.postgres.base import Clock, Connection, Query
from storage.postgres.conversations import PostgresConversations
from storage.postgres.history import PostgresJobHistory
from storage.postgres.jobs import PostgresJobs
from storage.postgres.leasing import PostgresJobLeasing
from storage.postgres.ledger import PostgresLedger
from storage.postgres.locks import PostgresConversationLocks
from storage.postgres.playground import PostgresPlayground
from storage.postgres.pool import ConnectionPool
from storage.postgres.schema import current_version, migrate
from storage.postgres.settings import PostgresSettings
from storage.postgres.slack import PostgresSlackInstallations
from storage.postgres.tracking import PostgresJobTracking
from storage.postgres.urls import describe_url
from storage.postgres.writes import PostgresWriteBudgets
from storage.process import DEFAULT_LEASE_SECONDS, new_process_id

SQL_PROBE: Final[Query] = (
    "INSERT INTO storage_probes (process_id, probed_at) VALUES (%s, %s)"
    " ON CONFLICT (process_id) DO UPDATE SET probed_at = excluded.probed_at"
)
CONNECT_TIMEOUT = 10
"""Seconds to reach the server (each new connection)."""
POOL_TIMEOUT = 30.0
"""Seconds a call waits for a free connection when all ``pool_size`` are in use."""


class PostgresStore(
    PostgresConversations,
    PostgresJobs,
    PostgresJobTracking,
    PostgresJobLeasing,
    PostgresConversationLocks,
    PostgresPlayground,
    PostgresWriteBudgets,
    PostgresSettings,
    PostgresLedger,
    PostgresSlackInstallations,
    PostgresJobHistory,
):
    """genbot's storage on PostgreSQL: every interface of :mod:`storage.interfaces`, safe for
    many processes at once.

    Open with ``store = await PostgresStore.open(url)``; close with ``await store.close()``.
    Every method borrows a pooled connection; writes return after their commit. Failures
    raise :class:`storage.StorageError`.
    """

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        clock: Clock = time.time,
        pool_size: int = 10,
        event_retention: float = 24 * 3600.0,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        process_id: str | None = None,
        statement_timeout: float | None = None,
    ) -> PostgresStore:
        """Connect to ``url`` (``postgresql://user[:password]@host:port/database``), apply every
        pending migration under the migration lock, and open a pool of up to ``pool_size``
        connections. ``clock`` gives timestamps (Unix seconds); jobs this handle creates or
        claims are leased to ``process_id`` (a fresh one by default) for ``lease_seconds``. With
        ``statement_timeout`` (seconds), the server cancels a longer statement and a call
        gives up a little later (see :mod:`storage.postgres.base`)."""
        where = describe_url(url)
        try:
            async with await AsyncConnection.connect(
                url, autocommit=True, row_factory=dict_row, connect_timeout=CONNECT_TIMEOUT
            ) as conn:
                await migrate(conn, clock=clock)
        except psycopg.Error as error:
            reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise StorageError(f"cannot open the database at {where}: {reason}") from error
        pool = ConnectionPool(
            url,
            max(pool_size, 1),
            timeout=POOL_TIMEOUT,
            connect_timeout=CONNECT_TIMEOUT,
            statement_timeout=statement_timeout,
        )
        store = cls(
            pool,
            clock,
            url,
            process_id=process_id or new_process_id(),
            lease_seconds=lease_seconds,
            statement_timeout=statement_timeout,
        )
        store.event_retention = event_retention
        store._lock_pool = ConnectionPool(
            url, max(pool_size, 1), timeout=POOL_TIMEOUT, connect_timeout=CONNECT_TIMEOUT
        )
        return store

    async def close(self) -> None:
        """Close the idle connections (borrowed ones close when their call ends). Closing
        twice is harmless; any call after closing raises ``StoreClosedError``."""
        if self._closed:
            return
        self._closed = True
        await self._pool.close()
        await self._lock_pool.close()

    async def __aenter__(self) -> PostgresStore:
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
        async with self._connection() as conn:
            return await current_version(conn)

    async def probe_write(self) -> None:
        """Upsert this process's probe row (see :meth:`storage.Storage.probe_write`)."""
        await self._execute(SQL_PROBE, (self._process_id, self._now()))

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection (autocommit, rows as dicts): an escape hatch for benchmarks,
        diagnostics and tests; features use the typed methods."""
        async with self._connection() as conn:
            yield conn
