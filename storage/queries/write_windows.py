"""Platform write windows counted across processes.

Each granted write is a row ``(key, granted_at, until)``: it counts in its window until
``until`` (its window's length after the grant, plus ``ALLOWANCE`` for the request to reach the
platform). A reservation locks each window's key for its transaction (in key order, so two
reservations cannot deadlock), counts the rows still counting, and inserts one per window only
if every window has room. The reservations a process asks for while one is under way go
together in one transaction (:class:`~storage.queries.grouped.Grouped`), each judged after the
ones before it. Expired rows are deleted now and then. Where the database has one process, its
own pacing suffices: nothing is counted here.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from storage.queries.base import Clock
from storage.queries.grouped import Grouped
from storage.records.platforms import WriteWindow
from storage.sql.dialect import marks
from storage.sql.session import Database, Session

ALLOWANCE = 0.5
"""Seconds a write keeps counting past its window, for the request to reach the platform."""
PRUNE_EVERY: Final = 256
SQL_COUNTING: Final = (
    "SELECT key, COUNT(*) AS n, MAX(granted_at) AS last FROM write_slots"
    " WHERE key IN ({}) AND until > ? GROUP BY key"
)
SQL_FREED_AT: Final = (
    "SELECT until FROM write_slots WHERE key = ? AND until > ? ORDER BY until LIMIT 1 OFFSET ?"
)
SQL_SPEND: Final = "INSERT INTO write_slots (key, granted_at, until) VALUES (?, ?, ?)"
SQL_PRUNE: Final = "DELETE FROM write_slots WHERE until < ?"


Reservation = tuple[Sequence[WriteWindow], float]
"""The windows one write counts in, and its spacing."""


@dataclass
class WriteWindows:
    """Platform write limits counted across processes, so N processes writing into one
    channel or workspace stay within what the platform allows."""

    db: Database
    clock: Clock

    _reserved_since_prune = 0

    async def reserve_writes(
        self, windows: Sequence[WriteWindow], *, spacing: float = 0.0
    ) -> float:
        """Count one write in every window when each has room (and, with ``spacing``, the
        first window's previous write is at least that many seconds old): returns 0. Else
        nothing is counted and the answer is how many seconds to wait before asking again.
        Always 0 where the database has one process."""
        if not windows or self.db.dialect.transaction_lock is None:
            return 0.0
        return await self._reservations((windows, spacing))

    @functools.cached_property
    def _reservations(self) -> Grouped[Reservation, float]:
        return Grouped(self._reserve_together)

    async def _reserve_together(self, batch: Sequence[Reservation]) -> list[float]:
        """One transaction for ``batch``: each reservation, in turn, fits (0) in what is counted
        and what the ones before it took, or waits (nothing taken)."""
        lock = self.db.dialect.transaction_lock
        assert lock is not None
        now = self.clock()
        keys = sorted({window.key for windows, _ in batch for window in windows})
        self._reserved_since_prune += len(batch)
        prune = self._reserved_since_prune >= PRUNE_EVERY
        if prune:
            self._reserved_since_prune = 0

        async def work(tx: Session) -> list[float]:
            await tx.execute_each(lock, [(f"genbot.writes.{key}",) for key in keys])
            counting = SQL_COUNTING.format(marks(len(keys)))
            rows = await tx.fetch_all(counting, (*keys, now))
            counted = {row["key"]: (int(row["n"]), row["last"]) for row in rows}
            taken: Counter[str] = Counter()
            spend: list[tuple[str, float, float]] = []
            waits = []
            for windows, spacing in batch:
                wait = 0.0
                for n, window in enumerate(windows):
                    stored, last = counted.get(window.key, (0, None))
                    over = stored + taken[window.key] - max(window.capacity, 1)
                    if over >= stored:
                        wait = max(wait, window.seconds + ALLOWANCE)
                    elif over >= 0:
                        freed = await tx.fetch_one(SQL_FREED_AT, (window.key, now, over))
                        wait = max(wait, (freed["until"] if freed else now) - now)
                    if taken[window.key]:
                        last = now
                    if n == 0 and spacing > 0 and last is not None:
                        wait = max(wait, last + spacing - now)
                if wait <= 0:
                    for window in windows:
                        taken[window.key] += 1
                        spend.append((window.key, now, now + window.seconds + ALLOWANCE))
                waits.append(max(wait, 0.0))
            await tx.execute_many(SQL_SPEND, spend)
            if prune:
                await tx.execute(SQL_PRUNE, (now,))
            return waits

        return await self.db.transaction(work)
