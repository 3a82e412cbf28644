"""The usage ledger: tokens and credits per user per UTC day.

A user's totals and what they spent in a budget's window count, besides the rows naming them,
those ``/forget-me`` kept under :func:`~storage.queries.retention.erased_name` (what was spent
in the window when they deleted their data, and the charges of their jobs that ran through
it): deleting one's data gives no budget back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Final

from storage.errors import StorageError
from storage.queries.base import Clock
from storage.queries.retention import erased_name
from storage.records.usage import (
    ESTIMATED_CREDITS,
    HOUR,
    Refill,
    Spent,
    UsageTotals,
    utc_day,
    window_start,
)
from storage.sql.session import Database, Row, Session

SQL_ADD_USAGE: Final = (
    "INSERT INTO usage (platform, user_id, day, kind, job_id, tokens_prompt, tokens_completion,"
    " credits, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (job_id, kind) DO NOTHING"
)
SQL_COMPLETED: Final = "UPDATE usage SET tokens_completion = ? WHERE job_id = ? AND kind = ?"
SQL_COUNTED: Final = (
    "UPDATE usage SET tokens_prompt = ?, tokens_completion = ? WHERE job_id = ? AND kind = ?"
)
SQL_USAGE_FOR_USER: Final = (
    "SELECT COALESCE(SUM(tokens_prompt), 0) AS tokens_prompt,"
    " COALESCE(SUM(tokens_completion), 0) AS tokens_completion,"
    " COALESCE(SUM(credits), 0) AS credits, COUNT(*) AS entries,"
    f" COALESCE(SUM(CASE WHEN kind = '{ESTIMATED_CREDITS}' THEN credits ELSE 0 END), 0)"
    " AS estimated_credits FROM usage WHERE platform = ? AND user_id IN (?, ?) AND day = ?"
)
SQL_SPENT: Final = (
    "SELECT created_at, credits, tokens_prompt + tokens_completion AS tokens FROM usage"
    " WHERE platform = ? AND user_id IN (?, ?) AND day IN (?, ?) AND created_at >= ?"
)


@dataclass
class UsageLedger:
    """Tokens and credits per user per UTC day."""

    db: Database
    clock: Clock

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
        """Record one usage event; with ``job_id`` the pair (``job_id``, ``kind``) is recorded
        once (a repeat returns False)."""
        stamp = self.clock() if at is None else at
        values = (
            platform, user_id, utc_day(stamp), kind, job_id, tokens_prompt, tokens_completion,
            credits, stamp,
        )  # fmt: skip
        return await self.db.execute(SQL_ADD_USAGE, values) == 1

    async def complete_usage(
        self,
        job_id: str,
        tokens_completion: int,
        *,
        tokens_prompt: int | None = None,
        kind: str = "chat",
    ) -> bool:
        """Set the completion tokens of the usage recorded for (``job_id``, ``kind``) (a chat
        answer's is recorded with its prompt as it begins), and its prompt tokens when
        ``tokens_prompt`` is given (the provider counted them); False when there is none."""
        if tokens_prompt is None:
            return await self.db.execute(SQL_COMPLETED, (tokens_completion, job_id, kind)) == 1
        values = (tokens_prompt, tokens_completion, job_id, kind)
        return await self.db.execute(SQL_COUNTED, values) == 1

    async def usage_for_user(
        self, platform: str, user_id: str, day: str | date | None = None
    ) -> UsageTotals:
        """A user's totals for one UTC day (default: today), with what ``/forget-me`` kept
        under their derived name."""
        the_day = utc_day(self.clock()) if day is None else day_text(day)
        them = (platform, user_id, erased_name(platform, user_id))
        row = await self.db.fetch_one(SQL_USAGE_FOR_USER, (*them, the_day))
        assert row is not None
        return UsageTotals(
            int(row["tokens_prompt"]),
            int(row["tokens_completion"]),
            int(row["credits"]),
            int(row["entries"]),
            int(row["estimated_credits"]),
        )

    async def spent(self, platform: str, user_id: str, refill: Refill) -> Spent:
        """What a user spent in the window of ``refill`` now (:class:`Spent`)."""
        return await spent_in_window(self.db, platform, user_id, refill, self.clock())


async def spent_in_window(
    session: Session, platform: str, user_id: str, refill: Refill, now: float
) -> Spent:
    """What a user spent in the window of ``refill`` at ``now``, by hour."""
    rows = await session.fetch_all(*spent_statement(platform, user_id, refill, now))
    return spent_of(rows, refill, now)


def spent_statement(
    platform: str, user_id: str, refill: Refill, now: float
) -> tuple[str, tuple[str | float, ...]]:
    """The read of what a user spent in the window of ``refill`` at ``now`` (its rows make a
    :class:`Spent` with :func:`spent_of`), for sending with other statements: under their id
    and the name ``/forget-me`` keeps it by (:func:`~storage.queries.retention.erased_name`)."""
    start = window_start(refill, now)
    them = (platform, user_id, erased_name(platform, user_id))
    return SQL_SPENT, (*them, utc_day(start), utc_day(now), start)


def spent_of(rows: Sequence[Row], refill: Refill, now: float) -> Spent:
    """What :func:`spent_statement`'s ``rows`` say was spent, by hour."""
    hours: dict[float, tuple[int, int]] = {}
    for row in rows:
        at = float(row["created_at"])
        hour = at - at % HOUR
        credits, tokens = hours.get(hour, (0, 0))
        hours[hour] = (credits + int(row["credits"]), tokens + int(row["tokens"]))
    return Spent(refill, now, tuple((hour, *hours[hour]) for hour in sorted(hours)))


def day_text(day: str | date) -> str:
    """A day given as ``date`` or ``YYYY-MM-DD`` text, validated, as text."""
    if isinstance(day, date):
        return day.isoformat()
    try:
        return date.fromisoformat(day).isoformat()
    except ValueError:
        raise StorageError(f"not a day (YYYY-MM-DD): {day!r}") from None
