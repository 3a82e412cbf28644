"""The connection pool core of :class:`storage.postgres.PostgresStore`.

Every call borrows a pooled connection (autocommit, rows as dicts) for one statement or one
transaction and gives it back; a driver error becomes :class:`StorageError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, LiteralString

import psycopg

from storage.errors import StorageError, StoreClosedError
from storage.postgres.pool import Connection, ConnectionPool, PoolClosed, PoolTimeout
from storage.postgres.urls import describe_url
from storage.rows import Row

Clock = Callable[[], float]
Query = LiteralString

__all__ = ["Clock", "Connection", "PostgresBase", "Query"]


class PostgresBase:
    """Holds the pool and the clock (see :class:`storage.postgres.PostgresStore`)."""

    def __init__(
        self,
        pool: ConnectionPool,
        clock: Clock,
        url: str,
        *,
        process_id: str,
        lease_seconds: float,
    ) -> None:
        self._pool = pool
        self._clock = clock
        self._closed = False
        self._url = url
        self.where = describe_url(url)
        """The server and database (no credentials), for messages and diagnostics."""
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
        """True once :meth:`storage.postgres.PostgresStore.close` was called."""
        return self._closed

    def _now(self) -> float:
        return self._clock()

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Connection]:
        """A pooled connection (autocommit: each statement commits on its own)."""
        if self._closed:
            raise StoreClosedError("the store is closed")
        try:
            async with self._pool.connection() as conn:
                yield conn
        except PoolClosed as error:
            raise StoreClosedError("the store is closed") from error
        except PoolTimeout as error:
            raise StorageError(
                f"no database connection within the timeout ({self.where})"
            ) from error
        except psycopg.Error as error:
            raise StorageError(f"database error: {_first_line(error)}") from error

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[Connection]:
        """A pooled connection inside one transaction: committed when the block ends, rolled
        back when it raises."""
        async with self._connection() as conn, conn.transaction():
            yield conn

    async def _fetch_one(self, sql: Query, parameters: Sequence[Any] = ()) -> Row | None:
        async with self._connection() as conn:
            cursor = await conn.execute(sql, parameters)
            return await cursor.fetchone()

    async def _fetch_all(self, sql: Query, parameters: Sequence[Any] = ()) -> list[Row]:
        async with self._connection() as conn:
            cursor = await conn.execute(sql, parameters)
            return await cursor.fetchall()

    async def _execute(self, sql: Query, parameters: Sequence[Any] = ()) -> int:
        """Run one statement; the number of rows it changed."""
        async with self._connection() as conn:
            cursor = await conn.execute(sql, parameters)
            return cursor.rowcount


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
