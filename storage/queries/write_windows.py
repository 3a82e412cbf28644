"""Platform write windows counted across processes.

Each granted write is a row ``(key, granted_at, until)``: it counts in its window until
``until`` (its window's length after the grant, plus ``ALLOWANCE`` for the request to reach the
platform). A reservation locks each window's key for its transaction (in key order, so two
reservations cannot deadlock), counts the rows still counting, and inserts one per window only
if every window has room. Expired rows are deleted now and then. Where the database has one
process, its own pacing suffices: nothing is counted here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from storage.queries.base import Queries
from storage.records.platforms import WriteWindow
from storage.sql.session import Session

ALLOWANCE = 0.5
"""Seconds a write keeps counting past its window, for the request to reach the platform."""
PRUNE_EVERY: Final = 256
SQL_COUNTING: Final = (
    "SELECT COUNT(*) AS n, MAX(granted_at) AS last FROM write_slots WHERE key = ? AND until > ?"
)
SQL_FREED_AT: Final = (
    "SELECT until FROM write_slots WHERE key = ? AND until > ? ORDER BY until LIMIT 1 OFFSET ?"
)
SQL_SPEND: Final = "INSERT INTO write_slots (key, granted_at, until) VALUES (?, ?, ?)"
SQL_PRUNE: Final = "DELETE FROM write_slots WHERE until < ?"


class WriteWindowQueries(Queries):
    """:class:`storage.WriteWindows`."""

    _reserved_since_prune = 0

    async def reserve_writes(
        self, windows: Sequence[WriteWindow], *, spacing: float = 0.0
    ) -> float:
        lock = self.db.dialect.transaction_lock
        if not windows or lock is None:
            return 0.0
        now = self._clock()
        self._reserved_since_prune += 1
        prune = self._reserved_since_prune >= PRUNE_EVERY
        if prune:
            self._reserved_since_prune = 0

        async def work(tx: Session) -> float:
            for key in sorted({window.key for window in windows}):
                await tx.execute(lock, (f"genbot.writes.{key}",))
            wait = 0.0
            for n, window in enumerate(windows):
                counting = await tx.fetch_one(SQL_COUNTING, (window.key, now))
                assert counting is not None
                over = int(counting["n"]) - max(window.capacity, 1)
                if over >= 0:
                    freed = await tx.fetch_one(SQL_FREED_AT, (window.key, now, over))
                    wait = max(wait, (freed["until"] if freed else now) - now)
                if n == 0 and spacing > 0 and counting["last"] is not None:
                    wait = max(wait, counting["last"] + spacing - now)
            if wait > 0:
                return wait
            for window in windows:
                await tx.execute(SQL_SPEND, (window.key, now, now + window.seconds + ALLOWANCE))
            if prune:
                await tx.execute(SQL_PRUNE, (now,))
            return 0.0

        return await self.db.transaction(work)
