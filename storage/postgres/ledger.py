"""The usage ledger and inbound event dedupe on PostgreSQL."""

from __future__ import annotations

from datetime import date
from typing import Final

from storage.postgres.base import PostgresBase, Query
from storage.records import ESTIMATED_CREDITS, UsageTotals
from storage.rules import day_text, utc_day

SQL_ADD_USAGE: Final[Query] = (
    "INSERT INTO usage (platform, user_id, day, kind, job_id, tokens_prompt, tokens_completion,"
    " credits, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (job_id, kind) DO NOTHING"
)
SQL_USAGE_FOR_USER: Final[Query] = (
    "SELECT COALESCE(SUM(tokens_prompt), 0) AS tokens_prompt,"
    " COALESCE(SUM(tokens_completion), 0) AS tokens_completion,"
    " COALESCE(SUM(credits), 0) AS credits, COUNT(*) AS entries,"
    f" COALESCE(SUM(CASE WHEN kind = '{ESTIMATED_CREDITS}' THEN credits ELSE 0 END), 0)"
    " AS estimated_credits FROM usage WHERE platform = %s AND user_id = %s AND day = %s"
)
SQL_REMEMBER: Final[Query] = (
    "INSERT INTO processed_events (platform, event_id, seen_at) VALUES (%s, %s, %s)"
    " ON CONFLICT (platform, event_id) DO UPDATE SET seen_at = excluded.seen_at"
    " WHERE processed_events.seen_at < %s"
)
SQL_PRUNE: Final[Query] = "DELETE FROM processed_events WHERE seen_at < %s"
PRUNE_EVERY: Final = 1000
"""Expired event ids are deleted once every this many remembered events (per process)."""


class PostgresLedger(PostgresBase):
    """Usage ledger and event dedupe methods of :class:`storage.postgres.PostgresStore`."""

    event_retention: float = 24 * 3600.0
    """Seconds an inbound event id is remembered."""

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
        """Record one usage event; with ``job_id``, (``job_id``, ``kind``) is recorded once."""
        stamp = self._now() if at is None else at
        values = (
            platform,
            user_id,
            utc_day(stamp),
            kind,
            job_id,
            tokens_prompt,
            tokens_completion,
            credits,
            stamp,
        )
        return await self._execute(SQL_ADD_USAGE, values, repeatable=False) == 1

    async def usage_for_user(
        self, platform: str, user_id: str, day: str | date | None = None
    ) -> UsageTotals:
        """A user's totals for one UTC day (default: today)."""
        the_day = utc_day(self._now()) if day is None else day_text(day)
        row = await self._fetch_one(SQL_USAGE_FOR_USER, (platform, user_id, the_day))
        assert row is not None
        return UsageTotals(
            int(row["tokens_prompt"]),
            int(row["tokens_completion"]),
            int(row["credits"]),
            int(row["entries"]),
            int(row["estimated_credits"]),
        )

    async def remember_event(self, platform: str, event_id: str) -> bool:
        """True the first time an event id is seen within ``event_retention`` (in any
        process), False for a repeat."""
        self._remembered_since_prune += 1
        prune = self._remembered_since_prune >= PRUNE_EVERY
        if prune:
            self._remembered_since_prune = 0
        now = self._now()
        cutoff = now - self.event_retention
        async with self._connection() as conn:
            if prune:
                await conn.execute(SQL_PRUNE, (cutoff,))
            cursor = await conn.execute(SQL_REMEMBER, (platform, event_id, now, cutoff))
            return cursor.rowcount == 1
