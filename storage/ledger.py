"""The usage ledger (tokens and credits per user per UTC day) and inbound event dedup."""

from __future__ import annotations

from datetime import date
from typing import Final

from sqlite_utils import Database

from storage.base import StoreBase, day_text, utc_day
from storage.records import UsageTotals
from storage.sql import write_transaction

SQL_USAGE_FOR_USER: Final = (
    "SELECT COALESCE(SUM(tokens_prompt), 0), COALESCE(SUM(tokens_completion), 0),"
    " COALESCE(SUM(credits), 0), COUNT(*) FROM usage"
    " WHERE platform = ? AND user_id = ? AND day = ?"
)
SQL_USAGE_FOR_DAY: Final = (
    "SELECT COALESCE(SUM(tokens_prompt), 0), COALESCE(SUM(tokens_completion), 0),"
    " COALESCE(SUM(credits), 0), COUNT(*) FROM usage WHERE day = ?"
)
PRUNE_EVERY: Final = 1000
"""``remember_event`` prunes expired entries once every this many calls."""


class LedgerStore(StoreBase):
    """Usage ledger and event dedup methods of :class:`storage.Store`."""

    event_retention: float = 24 * 3600.0
    """Seconds a remembered inbound event id is kept (platform retries come within minutes)."""

    _remembered_since_prune = 0

    async def add_usage(
        self,
        platform: str,
        user_id: str,
        *,
        tokens_prompt: int = 0,
        tokens_completion: int = 0,
        credits: int = 0,
        kind: str = "chat",
        job_id: str | None = None,
        at: float | None = None,
    ) -> bool:
        """Record one usage event on the UTC day of ``at`` (default: now). ``kind`` labels it
        (``chat``, ``task``, ``diffusion`` …). With ``job_id``, the pair (``job_id``, ``kind``)
        is recorded once: a repeat (say, after a restart) is ignored and returns False."""

        def work(db: Database) -> bool:
            stamp = self._now() if at is None else at
            with write_transaction(db):
                cursor = db.conn.execute(
                    "INSERT INTO usage (platform, user_id, day, kind, job_id, tokens_prompt,"
                    " tokens_completion, credits, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (job_id, kind) DO NOTHING",
                    (
                        platform,
                        user_id,
                        utc_day(stamp),
                        kind,
                        job_id,
                        tokens_prompt,
                        tokens_completion,
                        credits,
                        stamp,
                    ),
                )
            return cursor.rowcount == 1

        return await self._call(work)

    async def usage_for_user(
        self, platform: str, user_id: str, day: str | date | None = None
    ) -> UsageTotals:
        """A user's totals for one UTC day (default: today)."""

        def work(db: Database) -> UsageTotals:
            the_day = utc_day(self._now()) if day is None else day_text(day)
            row = db.conn.execute(SQL_USAGE_FOR_USER, (platform, user_id, the_day)).fetchone()
            return UsageTotals(*row)

        return await self._call(work)

    async def usage_for_day(
        self, day: str | date | None = None, *, platform: str | None = None
    ) -> UsageTotals:
        """Everyone's totals for one UTC day (default: today), optionally on one platform."""

        def work(db: Database) -> UsageTotals:
            the_day = utc_day(self._now()) if day is None else day_text(day)
            if platform is None:
                row = db.conn.execute(SQL_USAGE_FOR_DAY, (the_day,)).fetchone()
            else:
                row = db.conn.execute(
                    SQL_USAGE_FOR_DAY + " AND platform = ?", (the_day, platform)
                ).fetchone()
            return UsageTotals(*row)

        return await self._call(work)

    async def remember_event(self, platform: str, event_id: str) -> bool:
        """True the first time an inbound event id is seen, False for a repeat (a platform
        retry): handle the event only on True. Entries older than ``event_retention`` are
        pruned now and then."""
        self._remembered_since_prune += 1
        prune = self._remembered_since_prune >= PRUNE_EVERY
        if prune:
            self._remembered_since_prune = 0

        def work(db: Database) -> bool:
            now = self._now()
            with write_transaction(db):
                if prune:
                    db.conn.execute(
                        "DELETE FROM processed_events WHERE seen_at < ?",
                        (now - self.event_retention,),
                    )
                cursor = db.conn.execute(
                    "INSERT INTO processed_events (platform, event_id, seen_at) VALUES (?, ?, ?)"
                    " ON CONFLICT (platform, event_id) DO NOTHING",
                    (platform, event_id, now),
                )
            return cursor.rowcount == 1

        return await self._call(work)

    async def prune_events(self, older_than: float | None = None) -> int:
        """Forget event ids seen more than ``older_than`` seconds ago (default:
        ``event_retention``); returns how many were dropped."""
        age = self.event_retention if older_than is None else older_than

        def work(db: Database) -> int:
            with write_transaction(db):
                cursor = db.conn.execute(
                    "DELETE FROM processed_events WHERE seen_at < ?", (self._now() - age,)
                )
            return cursor.rowcount

        return await self._call(work)
