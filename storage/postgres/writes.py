"""Platform write limits shared by processes on PostgreSQL.

Each granted write is a row ``(key, granted_at, until)``: it counts in its window until
``until`` (its window's length after the grant, plus ``ALLOWANCE`` for the request to reach the
platform). A reservation takes a transaction advisory lock per window key (in key order, so two
reservations cannot deadlock), counts the rows still counting, and inserts one per window only
if every window has room. Expired rows are deleted now and then.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from storage.postgres.base import PostgresBase, Query
from storage.records import WriteWindow

ALLOWANCE = 0.5
"""Seconds a write keeps counting past its window, for the request to reach the platform."""
PRUNE_EVERY = 256
SQL_LOCK_KEY: Final[Query] = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
SQL_COUNTING: Final[Query] = (
    "SELECT COUNT(*) AS n, MAX(granted_at) AS last FROM write_slots WHERE key = %s AND until > %s"
)
SQL_FREED_AT: Final[Query] = (
    "SELECT until FROM write_slots WHERE key = %s AND until > %s ORDER BY until OFFSET %s LIMIT 1"
)
SQL_SPEND: Final[Query] = "INSERT INTO write_slots (key, granted_at, until) VALUES (%s, %s, %s)"
SQL_PRUNE: Final[Query] = "DELETE FROM write_slots WHERE until < %s"


class PostgresWriteBudgets(PostgresBase):
    """Write budget method of :class:`storage.postgres.PostgresStore`."""

    _reserved_since_prune = 0

    async def reserve_writes(
        self, windows: Sequence[WriteWindow], *, spacing: float = 0.0
    ) -> float:
        """Count one write in every window if each has room (see the module docstring);
        0 when counted, else the seconds to wait."""
        if not windows:
            return 0.0
        now = self._now()
        self._reserved_since_prune += 1
        prune = self._reserved_since_prune >= PRUNE_EVERY
        if prune:
            self._reserved_since_prune = 0
        async with self._transaction() as conn:
            for key in sorted({window.key for window in windows}):
                await conn.execute(SQL_LOCK_KEY, (f"genbot.writes.{key}",))
            wait = 0.0
            for n, window in enumerate(windows):
                cursor = await conn.execute(SQL_COUNTING, (window.key, now))
                counting = await cursor.fetchone()
                assert counting is not None
                over = int(counting["n"]) - max(window.capacity, 1)
                if over >= 0:
                    cursor = await conn.execute(SQL_FREED_AT, (window.key, now, over))
                    freed = await cursor.fetchone()
                    wait = max(wait, (freed["until"] if freed else now) - now)
                if n == 0 and spacing > 0 and counting["last"] is not None:
                    wait = max(wait, counting["last"] + spacing - now)
            if wait > 0:
                return wait
            for window in windows:
                until = now + window.seconds + ALLOWANCE
                await conn.execute(SQL_SPEND, (window.key, now, until))
            if prune:
                await conn.execute(SQL_PRUNE, (now,))
        return 0.0
