"""The connection pool core of :class:`storage.postgres.PostgresStore`.

Every call borrows a pooled connection (autocommit, rows as dicts) for one statement or one
transaction and gives it back; a driver error becomes :class:`StorageError`.

A call is bounded: the server cancels a statement after ``[storage] statement_timeout``
(the pool's connections set it), and genbot gives up waiting a few seconds later (a server that
stalls cannot cancel anything). A call whose connection was lost under it (a restart, a
terminated backend) raises :class:`ConnectionLost`; the calls that are safe to repeat — reads,
and writes that are idempotent or guarded by their compare-and-set — run once more on a fresh
connection (:meth:`PostgresBase._attempt`), so one dead connection never fails a call.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, LiteralString, TypeVar

import psycopg

from storage.errors import StorageError, StoreClosedError
from storage.postgres.pool import Connection, ConnectionPool, PoolClosed, PoolTimeout
from storage.postgres.urls import describe_url
from storage.rows import Row

Clock = Callable[[], float]
Query = LiteralString
T = TypeVar("T")

__all__ = ["Clock", "Connection", "ConnectionLost", "PostgresBase", "Query"]

GRACE_SECONDS = 5.0
"""How long past ``statement_timeout`` genbot waits for the server's own cancellation."""


class ConnectionLost(StorageError):
    """The connection broke under a call (server restart, terminated backend, network)."""


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
        statement_timeout: float | None = None,
    ) -> None:
        self._pool = pool
        self._clock = clock
        self._closed = False
        self._url = url
        self.where = describe_url(url)
        """The server and database (no credentials), for messages and diagnostics."""
        self._process_id = process_id
        self._lease_seconds = lease_seconds
        self._call_bound = statement_timeout + GRACE_SECONDS if statement_timeout else None

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
                try:
                    async with self._bounded():
                        yield conn
                except psycopg.Error as error:
                    if conn.broken or conn.closed:
                        lost = f"database connection lost: {_first_line(error)}"
                        raise ConnectionLost(lost) from error
                    raise
        except TimeoutError as error:
            raise StorageError(
                f"the database did not answer within {self._call_bound:g} s ({self.where})"
            ) from error
        except PoolClosed as error:
            raise StoreClosedError("the store is closed") from error
        except PoolTimeout as error:
            raise StorageError(
                f"no database connection within the timeout ({self.where})"
            ) from error
        except psycopg.Error as error:
            raise StorageError(f"database error: {_first_line(error)}") from error

    def _bounded(self) -> contextlib.AbstractAsyncContextManager[object]:
        if self._call_bound is None:
            return contextlib.nullcontext()
        return asyncio.timeout(self._call_bound)

    async def _attempt(
        self, work: Callable[[Connection], Awaitable[T]], *, transaction: bool = False
    ) -> T:
        """``work(conn)`` on a pooled connection (inside one transaction with
        ``transaction``), and once more on a fresh connection when the first was lost: only
        for work that is safe to repeat (see the module docstring)."""
        for attempt in (1, 2):
            try:
                async with self._transaction() if transaction else self._connection() as conn:
                    return await work(conn)
            except ConnectionLost:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[Connection]:
        """A pooled connection inside one transaction: committed when the block ends, rolled
        back when it raises."""
        async with self._connection() as conn, conn.transaction():
            yield conn

    async def _fetch_one(self, sql: Query, parameters: Sequence[Any] = ()) -> Row | None:
        async def work(conn: Connection) -> Row | None:
            cursor = await conn.execute(sql, parameters)
            return await cursor.fetchone()

        return await self._attempt(work)

    async def _fetch_all(self, sql: Query, parameters: Sequence[Any] = ()) -> list[Row]:
        async def work(conn: Connection) -> list[Row]:
            cursor = await conn.execute(sql, parameters)
            return await cursor.fetchall()

        return await self._attempt(work)

    async def _execute(
        self, sql: Query, parameters: Sequence[Any] = (), *, repeatable: bool = True
    ) -> int:
        """Run one statement; the number of rows it changed. ``repeatable``: running it
        twice does no harm (it runs again on a fresh connection when the first was lost)."""

        async def work(conn: Connection) -> int:
            cursor = await conn.execute(sql, parameters)
            return cursor.rowcount

        if not repeatable:
            async with self._connection() as conn:
                return await work(conn)
        return await self._attempt(work)


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
