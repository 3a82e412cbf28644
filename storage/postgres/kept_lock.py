"""A session advisory lock held for a block, taken again when its connection is lost.

The server drops a session advisory lock with its connection: a terminated backend or a
restart frees it while its holder, alive, goes on with the block. The others then read the lock
as their sign that nobody is at work (:mod:`bot.features.chat.interrupted` settles an answer
whose conversation lock is free), so a live holder has to hold it again at once. While the
block runs, :class:`KeptLock` waits on its connection (no statement: it reads the socket, where
nothing comes but the server's goodbye); the moment the connection fails it says so in the log
and takes the lock again on a new connection, trying every :data:`RETAKE_PAUSE_MOST` seconds
at most while the server cannot be reached, and queueing behind whoever took it meanwhile. It
holds it again until the block ends, watching the new connection the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Final

import psycopg
from psycopg import AsyncConnection

log = logging.getLogger("genbot.storage")

SQL_LOCK: Final = "SELECT pg_advisory_lock({})"
SQL_UNLOCK: Final = "SELECT pg_advisory_unlock({})"
RETAKE_PAUSE_FIRST: Final = 0.05
RETAKE_PAUSE_MOST: Final = 1.0
"""The longest pause between two tries to take a lost lock again (doubling from
:data:`RETAKE_PAUSE_FIRST` while the server cannot be reached)."""


def key_sql(key: str | int) -> str:
    """The lock's key as a statement's value: a number as it is, a text hashed."""
    return "%s" if isinstance(key, int) else "hashtextextended(%s, 0)"


class KeptLock:
    """``key``'s session advisory lock, held on ``conn`` (taken by the caller), kept until
    :meth:`release` (see the module docstring). ``url`` opens a connection to take it again;
    ``name`` names it in the log."""

    def __init__(
        self,
        conn: AsyncConnection[Any],
        key: str | int,
        *,
        name: str,
        url: str,
        connect_timeout: int,
    ) -> None:
        self._first = conn
        self._conn: AsyncConnection[Any] | None = conn
        """The connection holding the lock now (None while it is being taken again)."""
        self._key = key
        self._name = name
        self._url = url
        self._connect_timeout = connect_timeout
        self.lost = 0
        """How many times the lock's connection failed while it was held."""
        self.held = asyncio.Event()
        """Set while this holder holds the lock (cleared from a loss until taken again)."""
        self.held.set()
        self._keeper = asyncio.create_task(self._keep(), name="genbot-lock-keeper")

    async def _keep(self) -> None:
        conn = self._first
        while True:
            error = await _until_lost(conn)
            self.held.clear()
            self._conn = None
            await conn.close()
            self.lost += 1
            log.warning(
                "%s's connection failed while it was held (%s): taking it again",
                self._name,
                _first_line(error),
            )
            conn = await self._take_again()
            self._conn = conn
            self.held.set()
            log.warning("%s is held again after its connection failed", self._name)

    async def _take_again(self) -> AsyncConnection[Any]:
        pause = RETAKE_PAUSE_FIRST
        while True:
            conn: AsyncConnection[Any] | None = None
            try:
                conn = await AsyncConnection.connect(
                    self._url, autocommit=True, connect_timeout=self._connect_timeout
                )
                await conn.execute(SQL_LOCK.format(key_sql(self._key)), (self._key,))
                return conn
            except psycopg.Error as error:
                log.debug("taking %s again failed: %s", self._name, _first_line(error))
                if conn is not None:
                    await conn.close()
            except BaseException:
                if conn is not None:
                    await conn.close()
                raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, RETAKE_PAUSE_MOST)

    async def release(self) -> None:
        """Stop keeping the lock and release it: unlocked on the connection it was taken on
        (which the caller gives back), or by closing the one it was taken again on."""
        self._keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._keeper
        conn, self._conn = self._conn, None
        self.held.clear()
        if conn is not None and conn is not self._first:
            await conn.close()
            return
        if conn is None:
            log.warning("%s was not held again before its holder was done", self._name)
            return
        try:
            await conn.execute(SQL_UNLOCK.format(key_sql(self._key)), (self._key,))
        except psycopg.Error as error:
            log.warning("%s's connection failed while it was held: %s", self._name, error)
            await conn.close()
        except BaseException:
            await conn.close()
            raise


async def _until_lost(conn: AsyncConnection[Any]) -> psycopg.Error:
    """Wait until ``conn`` fails (the server closed it, restarted or terminated its backend);
    the error it failed with. Nothing is sent on it: it is only read."""
    try:
        async for _notice in conn.notifies():
            pass
    except psycopg.Error as error:
        return error
    return psycopg.OperationalError("the connection stopped being read")


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
