"""The usage ledger: tokens and credits per user per UTC day."""

from __future__ import annotations

from datetime import date
from typing import Final

from sqlite_utils import Database

from storage.records import ESTIMATED_CREDITS, UsageTotals
from storage.rules import day_text, utc_day
from storage.sqlite.base import StoreBase
from storage.sqlite.sql import write_transaction

SQL_USAGE_FOR_USER: Final = (
    "SELECT COALESCE(SUM(tokens_prompt), 0), COALESCE(SUM(tokens_completion), 0),"
    " COALESCE(SUM(credits), 0), COUNT(*),"
    f" COALESCE(SUM(CASE WHEN kind = '{ESTIMATED_CREDITS}' THEN credits ELSE 0 END), 0)"
    " FROM usage WHERE platform = ? AND user_id = ? AND day = ?"
)


class SqliteLedger(StoreBase):
    """Usage ledger methods of :class:`storage.sqlite.SqliteStore`."""

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
