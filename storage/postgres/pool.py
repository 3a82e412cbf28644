"""A small connection pool that never loses a cancellation.

psycopg-pool waits for connections with ``asyncio.wait_for``, which on Python 3.11 can swallow
a task's cancellation when a connection arrives at the same moment (CPython gh-86296, not
backported; psycopg #1413): the tracker then ignores its stop and shutdown hangs. This pool waits
only on an :class:`asyncio.Semaphore` under :func:`asyncio.timeout`, both cancel-safe on 3.11.

Up to ``size`` connections are opened on demand and reused. A connection that comes back broken,
closed or inside a transaction (a cancelled statement) is closed rather than reused. An idle
connection the server has spoken on since it came back (its socket is readable: the server
closed it, restarted or terminated its backend) is closed when it is next borrowed instead of
failing the statement given to it: after a database restart no idle connection fails once.
"""

from __future__ import annotations

import asyncio
import select
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, dict_row

Connection = AsyncConnection[DictRow]


class PoolTimeout(Exception):
    """No connection became free within the pool's timeout."""


class PoolClosed(Exception):
    """The pool was used after :meth:`ConnectionPool.close`."""


class ConnectionPool:
    """Autocommit connections (rows as dicts) to ``url``, at most ``size`` at once."""

    def __init__(
        self,
        url: str,
        size: int,
        *,
        timeout: float,
        connect_timeout: int,
        statement_timeout: float | None = None,
    ) -> None:
        self._url = url
        self._timeout = timeout
        self._connect: dict[str, Any] = {"connect_timeout": connect_timeout}
        if statement_timeout:
            milliseconds = max(int(statement_timeout * 1000), 1)
            given = conninfo_to_dict(url).get("options")
            options = f"-c statement_timeout={milliseconds}"
            self._connect["options"] = f"{given} {options}" if given else options
        self._slots = asyncio.Semaphore(size)
        self._idle: list[Connection] = []
        self._closed = False

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """Borrow a connection for the block; it goes back (or is closed) when the block ends."""
        conn = await self._acquire()
        try:
            yield conn
        finally:
            await self._release(conn)

    async def _acquire(self) -> Connection:
        if self._closed:
            raise PoolClosed("the connection pool is closed")
        try:
            async with asyncio.timeout(self._timeout):
                await self._slots.acquire()
        except TimeoutError:
            raise PoolTimeout(f"no free connection within {self._timeout:g} s") from None
        try:
            while self._idle:
                conn = self._idle.pop()
                if _reusable(conn) and not _hung_up(conn):
                    return conn
                await conn.close()
            return await AsyncConnection.connect(
                self._url, autocommit=True, row_factory=dict_row, **self._connect
            )
        except BaseException:
            self._slots.release()
            raise

    async def _release(self, conn: Connection) -> None:
        try:
            if self._closed or not _reusable(conn):
                await conn.close()
            else:
                self._idle.append(conn)
        finally:
            self._slots.release()

    async def close(self) -> None:
        """Close the idle connections now, and every borrowed one when it comes back."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.close()


def _reusable(conn: Connection) -> bool:
    return (
        not conn.closed
        and not conn.broken
        and conn.info.transaction_status == TransactionStatus.IDLE
    )


def _hung_up(conn: Connection) -> bool:
    """Whether the server sent something on an idle connection (nothing is expected there
    but its goodbye: a termination notice or the end of the stream)."""
    try:
        readable, _, _ = select.select([conn.pgconn.socket], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True
    return bool(readable)
