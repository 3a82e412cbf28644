"""genbot's PostgreSQL database: a pool of autocommit connections shared by many processes.

Every statement (or transaction) borrows a pooled connection and gives it back; a driver error
becomes :class:`StorageError`. A call is bounded: the server cancels a statement after
``[storage] statement_timeout`` (the pool's connections set it), and genbot gives up waiting
``GRACE_SECONDS`` later (a server that stalls cannot cancel anything). A call whose connection
was lost under it (a restart, a terminated backend) raises :class:`ConnectionLost`; the calls
that are safe to repeat — reads, and writes said to be repeatable (idempotent, or guarded by a
compare-and-set) — run once more on a fresh connection, so one dead connection never fails
them.

Locks between processes are session advisory locks, each held (or awaited) on a connection of
its own from a second pool, so long holds cannot starve statements; ``pg_advisory_lock`` queues
the processes that ask in the order they asked, and the server drops a dead process's locks
with its connection. A live holder whose connection is lost (a restart, a terminated backend)
takes its lock again at once (:mod:`storage.postgres.kept_lock`). Notices are ``LISTEN`` on a
connection of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Final, TypeVar

import psycopg
from psycopg import AsyncConnection, AsyncCursor
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import DictRow

from storage.errors import StorageError, StoreClosedError
from storage.postgres.kept_lock import SQL_LOCK, KeptLock, key_sql
from storage.postgres.pool import Connection, ConnectionPool, PoolClosed, PoolTimeout
from storage.sql.dialect import POSTGRES
from storage.sql.session import Row, Session, Values

log = logging.getLogger("genbot.storage")

T = TypeVar("T")
CONNECT_TIMEOUT: Final = 10
"""Seconds to reach the server (each new connection)."""
POOL_TIMEOUT: Final = 30.0
"""Seconds a call waits for a free connection when all ``pool_size`` are in use."""
GRACE_SECONDS: Final = 5.0
"""How long past ``statement_timeout`` genbot waits for the server's own cancellation."""


class ConnectionLost(StorageError):
    """The connection broke under a call (server restart, terminated backend, network)."""


class PostgresDatabase:
    """A :class:`storage.sql.session.Database` on PostgreSQL (see the module docstring)."""

    dialect: Final = POSTGRES

    def __init__(
        self, url: str, *, pool_size: int = 10, statement_timeout: float | None = None
    ) -> None:
        self.url, self.where, self.closed = url, describe_url(url), False
        """``where``: the server and database (no credentials), for messages."""
        size = max(pool_size, 1)
        self._pool = ConnectionPool(
            url,
            size,
            timeout=POOL_TIMEOUT,
            connect_timeout=CONNECT_TIMEOUT,
            statement_timeout=statement_timeout,
        )
        self._lock_pool = ConnectionPool(
            url, size, timeout=POOL_TIMEOUT, connect_timeout=CONNECT_TIMEOUT
        )
        self._call_bound = statement_timeout + GRACE_SECONDS if statement_timeout else None

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection (autocommit, rows as dicts, ``%s`` placeholders): for the
        schema's migrations, and an escape hatch for benchmarks, diagnostics and tests."""
        if self.closed:
            raise StoreClosedError("the store is closed")
        try:
            async with self._pool.connection() as conn:
                try:
                    async with asyncio.timeout(self._call_bound):
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

    async def _attempt(
        self, work: Callable[[Session], Awaitable[T]], repeatable: bool, transaction: bool = False
    ) -> T:
        for attempt in (1, 2):
            try:
                async with self.connection() as conn:
                    if not transaction:
                        return await work(_Statements(conn))
                    return await _in_transaction(conn, work)
            except ConnectionLost:
                if attempt == 2 or not repeatable:
                    raise
        raise AssertionError("unreachable")

    async def fetch_one(
        self, sql: str, values: Values = (), *, repeatable: bool = True
    ) -> Row | None:
        return await self._attempt(lambda s: s.fetch_one(sql, values), repeatable)

    async def fetch_all(
        self, sql: str, values: Values = (), *, repeatable: bool = True
    ) -> list[Row]:
        return await self._attempt(lambda s: s.fetch_all(sql, values), repeatable)

    async def execute(self, sql: str, values: Values = (), *, repeatable: bool = False) -> int:
        return await self._attempt(lambda s: s.execute(sql, values), repeatable)

    async def execute_many(self, sql: str, rows: Iterable[Values]) -> int:
        return await self._attempt(lambda s: s.execute_many(sql, rows), False)

    async def execute_each(self, sql: str, rows: Iterable[Values]) -> list[int]:
        return await self._attempt(lambda s: s.execute_each(sql, rows), False)

    async def fetch_each(
        self, statements: Iterable[tuple[str, Values]], *, repeatable: bool = False
    ) -> list[list[Row]]:
        batch = list(statements)
        return await self._attempt(lambda s: s.fetch_each(batch), repeatable)

    async def transaction(
        self, work: Callable[[Session], Awaitable[T]], *, repeatable: bool = False
    ) -> T:
        return await self._attempt(work, repeatable, transaction=True)

    @asynccontextmanager
    async def lock(self, key: str | int, *, wait: float, name: str) -> AsyncIterator[None]:
        """Hold ``key``'s session advisory lock for the block (see the module docstring); only
        the wait for it is bounded, not the block. A connection whose lock state is in doubt
        (an error, a cancelled wait) is closed, never reused. Lost with its connection while
        the block runs, the lock is taken again at once (:class:`KeptLock`)."""
        async with contextlib.AsyncExitStack() as stack:
            try:
                async with asyncio.timeout(wait):
                    conn = await stack.enter_async_context(self._lock_pool.connection())
                    await _lock(conn, key)
            except TimeoutError as error:
                raise StorageError(f"{name} stayed busy for {wait:g} s") from error
            except PoolTimeout as error:
                raise StorageError(f"no connection for {name} ({self.where})") from error
            except psycopg.Error as error:
                raise StorageError(f"taking {name} failed ({self.where}): {error}") from error
            kept = KeptLock(conn, key, name=name, url=self.url, connect_timeout=CONNECT_TIMEOUT)
            try:
                yield
            finally:
                await kept.release()

    async def listen(self, channel: str) -> AsyncIterator[str | None]:
        """``LISTEN`` on a connection of its own (see :meth:`Database.listen`); channels are
        genbot's own names (lower case letters, digits and underscores)."""
        if not channel.isidentifier() or not channel.islower():
            raise ValueError(f"not a channel name: {channel!r}")
        try:
            conn = await AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT
            )
        except psycopg.Error as error:
            raise StorageError(f"cannot listen for {channel} ({self.where}): {error}") from error
        try:
            await conn.execute(f"LISTEN {channel}")
            yield None
            async for notice in conn.notifies():
                yield notice.payload
        except psycopg.Error as error:
            raise StorageError(
                f"listening for {channel} stopped ({self.where}): {error}"
            ) from error
        finally:
            await conn.close()

    async def close(self) -> None:
        """Close the idle connections (borrowed ones close when their call ends); any call
        after raises :class:`StoreClosedError`."""
        if self.closed:
            return
        self.closed = True
        await self._pool.close()
        await self._lock_pool.close()


async def _in_transaction(conn: Connection, work: Callable[[Session], Awaitable[T]]) -> T:
    """``work`` in one transaction on ``conn``: its ``BEGIN`` goes with its first statements
    (psycopg's ``transaction()`` sends it alone, a round trip of its own in every transaction),
    ``COMMIT`` after it, ``ROLLBACK`` when it raises. A transaction ``work`` sent no statement
    in sends nothing. A cancelled one is left as it is: its connection, not idle, is closed
    when it goes back to the pool."""
    statements = _Statements(conn, begin=True)
    try:
        result = await work(statements)
    except Exception:
        if not statements.begin:
            with contextlib.suppress(psycopg.Error):
                await conn.rollback()
        raise
    if not statements.begin:
        await conn.commit()
    return result


class _Statements:
    """Statements on one borrowed connection (in a transaction or not). A statement without
    values goes as it is written (no placeholders to translate). With ``begin``, the first
    statements sent start a transaction: a ``BEGIN`` goes before them, in the same round trip
    (a pipeline)."""

    dialect: Final = POSTGRES

    def __init__(self, conn: Connection, *, begin: bool = False) -> None:
        self._conn = conn
        self.begin = begin
        """Whether a ``BEGIN`` is still to be sent with the next statements."""

    @asynccontextmanager
    async def _pipeline(self) -> AsyncIterator[None]:
        """A pipeline for the statements sent in the block (one round trip as it ends), led by
        the transaction's ``BEGIN`` when it is still to be sent."""
        async with self._conn.pipeline():
            if self.begin:
                self.begin = False
                await self._conn.execute("BEGIN")
            yield

    async def _run(self, sql: str, values: Values) -> AsyncCursor[DictRow]:
        if self.begin:
            async with self._pipeline():
                return await self._send(sql, values)
        return await self._send(sql, values)

    async def _send(self, sql: str, values: Values) -> AsyncCursor[DictRow]:
        if not values:
            return await self._conn.execute(sql)
        return await self._conn.execute(POSTGRES.statement(sql), values)

    async def fetch_one(self, sql: str, values: Values = ()) -> Row | None:
        return await (await self._run(sql, values)).fetchone()

    async def fetch_all(self, sql: str, values: Values = ()) -> list[Row]:
        return await (await self._run(sql, values)).fetchall()

    async def execute(self, sql: str, values: Values = ()) -> int:
        return (await self._run(sql, values)).rowcount

    async def execute_many(self, sql: str, rows: Iterable[Values]) -> int:
        batch = list(rows)
        if not batch:
            return 0
        if self.begin:
            return sum(await self.execute_each(sql, batch))
        async with self._conn.cursor() as cursor:
            await cursor.executemany(POSTGRES.statement(sql), batch)
            return cursor.rowcount

    async def execute_each(self, sql: str, rows: Iterable[Values]) -> list[int]:
        batch = list(rows)
        if not batch:
            return []
        statement = POSTGRES.statement(sql)
        async with self._pipeline():
            cursors = [await self._conn.execute(statement, values) for values in batch]
        return [cursor.rowcount for cursor in cursors]

    async def fetch_each(self, statements: Iterable[tuple[str, Values]]) -> list[list[Row]]:
        batch = list(statements)
        if not batch:
            return []
        async with self._pipeline():
            cursors = [await self._send(sql, values) for sql, values in batch]
        return [await c.fetchall() if c.description is not None else [] for c in cursors]


async def _lock(conn: Connection, key: str | int) -> None:
    try:
        await conn.execute(SQL_LOCK.format(key_sql(key)), (key,))
    except BaseException:
        await conn.close()
        raise


def describe_url(url: str) -> str:
    """``host:port/database`` of a PostgreSQL URL, never its password."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "an unreadable PostgreSQL URL"
    host = str(parts.get("host") or "localhost")
    port = str(parts.get("port") or 5432)
    return f"{host}:{port}/{parts.get('dbname') or parts.get('user') or ''}"


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
