"""Job queries for the tracker and restarts, and the delivery claim."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from sqlite_utils import Database

from storage.job_records import UNFINISHED_STATUSES, Job, JobStatus
from storage.rows import job_from_row
from storage.rules import status_tuple, utc_day
from storage.sqlite.base import StoreBase
from storage.sqlite.sql import fetch_all, placeholders, write_transaction

SQL_UNFINISHED: Final = "SELECT * FROM jobs WHERE status IN ({}){} ORDER BY created_at, id"
SQL_CLAIM_DELIVERY: Final = (
    "UPDATE jobs SET status = CASE status WHEN 'finished' THEN 'posting' ELSE 'reporting' END,"
    " post_claims = post_claims + 1, updated_at = ?"
    " WHERE id = ? AND status IN ('finished', 'failed') AND platform IN ({})"
    " AND (owner IS NULL OR owner = ?)"
    " AND (next_poll_at IS NULL OR next_poll_at <= ?) RETURNING *"
)
SQL_CHARGE_CREDITS: Final = (
    "INSERT INTO usage (platform, user_id, day, kind, job_id, credits, created_at)"
    " VALUES (?, ?, ?, 'credits', ?, ?, ?) ON CONFLICT (job_id, kind) DO NOTHING"
)
SQL_NEXT_POLL: Final = (
    "SELECT MIN(next_poll_at) FROM jobs WHERE status IN ({}) AND next_poll_at > ?"
)


class SqliteJobTracking(StoreBase):
    """Tracker queries and delivery claims of :class:`storage.sqlite.SqliteStore`."""

    async def claim_delivery(
        self, job_id: str, platforms: Iterable[str], due_by: float
    ) -> Job | None:
        """Claim a job for posting its result or reporting its failure, in one transaction:
        ``finished → posting`` or ``failed → reporting``, only for a job this process owns
        (or nobody does), on one of ``platforms`` and
        when its next attempt is due by ``due_by`` (``next_poll_at`` unset or not later),
        counting the claim in ``post_claims``. A task's credits are recorded in the usage
        ledger with its ``posting`` claim (once per job, whatever the number of claims).
        The claimed job, or None when there was nothing to claim (the exactly-once guard:
        concurrent callers cannot both win)."""
        allowed = tuple(platforms)
        if not allowed:
            return None
        sql = SQL_CLAIM_DELIVERY.format(placeholders(len(allowed)))

        def work(db: Database) -> Job | None:
            now = self._now()
            with write_transaction(db):
                rows = fetch_all(db, sql, (now, job_id, *allowed, self._process_id, due_by))
                if not rows:
                    return None
                job = job_from_row(rows[0])
                if job.status == "posting" and job.family == "task" and job.credits:
                    charge = (job.platform, job.requester_id, utc_day(now), job.id, job.credits)
                    db.conn.execute(SQL_CHARGE_CREDITS, (*charge, now))
            return job

        return await self._call(work)

    async def list_unfinished_jobs(
        self,
        statuses: Iterable[JobStatus] = UNFINISHED_STATUSES,
        *,
        family: str | None = None,
        limit: int | None = None,
        after: Job | None = None,
        webhook_quiet_since: float | None = None,
        due_at: float | None = None,
        created_before: float | None = None,
        owner: str | None = None,
    ) -> list[Job]:
        """Jobs whose status is in ``statuses`` (default: every non-terminal one), oldest
        first (``created_at``, then ``id``). ``after`` continues a page after that job;
        ``webhook_quiet_since`` drops jobs that got a webhook at or after that time;
        ``due_at`` drops jobs whose ``next_poll_at`` is later than it; ``created_before``
        keeps only jobs created before that time; ``owner`` only that process's jobs."""
        chosen = status_tuple(statuses)
        conditions: list[str] = []
        values: list[Any] = list(chosen)
        if family is not None:
            conditions.append("family = ?")
            values.append(family)
        if after is not None:
            conditions.append("(created_at, id) > (?, ?)")
            values += [after.created_at, after.id]
        if webhook_quiet_since is not None:
            conditions.append("(last_webhook_at IS NULL OR last_webhook_at < ?)")
            values.append(webhook_quiet_since)
        if due_at is not None:
            conditions.append("(next_poll_at IS NULL OR next_poll_at <= ?)")
            values.append(due_at)
        if created_before is not None:
            conditions.append("created_at < ?")
            values.append(created_before)
        if owner is not None:
            conditions.append("owner = ?")
            values.append(owner)
        sql = SQL_UNFINISHED.format(
            placeholders(len(chosen)), "".join(f" AND {c}" for c in conditions)
        )
        if limit is not None:
            sql += " LIMIT ?"
            values.append(limit)
        rows = await self._call(lambda db: fetch_all(db, sql, values))
        return [job_from_row(row) for row in rows]

    async def next_poll_after(
        self, statuses: Iterable[JobStatus], after: float, *, owner: str | None = None
    ) -> float | None:
        """The earliest ``next_poll_at`` later than ``after`` among jobs in ``statuses`` (only
        ``owner``'s, when given): when the tracker next has something to do for them."""
        chosen = status_tuple(statuses)
        sql = SQL_NEXT_POLL.format(placeholders(len(chosen)))
        values: tuple[Any, ...] = (*chosen, after)
        if owner is not None:
            sql += " AND owner = ?"
            values += (owner,)

        def work(db: Database) -> float | None:
            value = db.conn.execute(sql, values).fetchone()[0]
            return None if value is None else float(value)

        return await self._call(work)

    async def mark_polled(self, job_ids: Iterable[str], *, at: float | None = None) -> int:
        """Set ``last_polled_at`` (default: now) on many jobs in one transaction."""
        ids = list(job_ids)

        def work(db: Database) -> int:
            stamp = self._now() if at is None else at
            with write_transaction(db):
                cursor = db.conn.executemany(
                    "UPDATE jobs SET last_polled_at = ? WHERE id = ?",
                    [(stamp, job_id) for job_id in ids],
                )
            return cursor.rowcount

        return await self._call(work)

    async def count_unfinished_jobs(self) -> list[tuple[JobStatus, str, int]]:
        """How many jobs are in each unfinished status, per platform (for metrics)."""
        chosen = status_tuple(UNFINISHED_STATUSES)
        sql = (
            f"SELECT status, platform, COUNT(*) FROM jobs WHERE status IN "
            f"({placeholders(len(chosen))}) GROUP BY status, platform"
        )

        def work(db: Database) -> list[tuple[JobStatus, str, int]]:
            return [(row[0], str(row[1]), int(row[2])) for row in db.conn.execute(sql, chosen)]

        return await self._call(work)
