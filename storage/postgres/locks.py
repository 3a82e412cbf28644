"""Conversation locks on PostgreSQL: a session advisory lock per conversation.

Each held (or awaited) lock has a connection of its own, from a pool kept apart from the
statement pool so long answers cannot starve short queries. ``pg_advisory_lock`` queues the
processes that ask in the order they asked, and the server drops a dead process's locks with
its connection. A connection whose lock state is in doubt (an error, a cancelled wait) is
closed, never reused.

The order of a conversation's turns holds while the lock's connection lives. When it is lost in
the middle of a turn (a server restart, a terminated backend), the server drops the lock with it:
the turn goes on to its end (its answer is already streaming) and is saved, and a turn of the
same conversation reaching another process meanwhile may start before it ends, answering from
the history as it was. Both answers are kept in the order they were saved, and the loss is
logged when the first turn ends. Aborting the turn would throw away an answer that is almost
always fine; taking the lock again could stall a streaming answer behind the next turn. Within
one process, turns of one conversation are serialized anyway (:mod:`adapters.runner`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

import psycopg

from storage.errors import StorageError
from storage.postgres.base import PostgresBase, Query
from storage.postgres.pool import Connection, ConnectionPool, PoolTimeout

log = logging.getLogger("genbot.storage")

LOCK_WAIT_SECONDS = 120.0
"""How long a turn waits for its conversation before giving up."""
SQL_LOCK: Final[Query] = "SELECT pg_advisory_lock(hashtextextended(%s, 0))"
SQL_UNLOCK: Final[Query] = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"


class PostgresConversationLocks(PostgresBase):
    """Conversation lock of :class:`storage.postgres.PostgresStore`."""

    _lock_pool: ConnectionPool

    @asynccontextmanager
    async def conversation_lock(self, conversation_id: int) -> AsyncIterator[None]:
        """Hold the conversation's advisory lock for the block (see the module docstring);
        only the wait for it is bounded, not the block."""
        key = f"genbot.conversation.{conversation_id}"
        async with contextlib.AsyncExitStack() as stack:
            try:
                async with asyncio.timeout(LOCK_WAIT_SECONDS):
                    conn = await stack.enter_async_context(self._lock_pool.connection())
                    await _lock(conn, key)
            except TimeoutError as error:
                raise StorageError(
                    f"conversation {conversation_id} stayed busy for {LOCK_WAIT_SECONDS:g} s"
                ) from error
            except PoolTimeout as error:
                raise StorageError(
                    f"no connection for a conversation lock ({self.where})"
                ) from error
            except psycopg.Error as error:
                raise StorageError(f"conversation lock failed ({self.where}): {error}") from error
            try:
                yield
            finally:
                await _unlock(conn, key)


async def _lock(conn: Connection, key: str) -> None:
    try:
        await conn.execute(SQL_LOCK, (key,))
    except BaseException:
        await conn.close()
        raise


async def _unlock(conn: Connection, key: str) -> None:
    """Release the lock; if that fails the connection is closed, which releases it too (a
    lost connection already had: the turn may then have overlapped another, so say so)."""
    try:
        await conn.execute(SQL_UNLOCK, (key,))
    except psycopg.Error as error:
        log.warning("a conversation lock's connection failed while it was held: %s", error)
        await conn.close()
    except BaseException:
        await conn.close()
        raise
