"""Tracker queries and the delivery claim on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from psycopg import sql

from storage.job_records import UNFINISHED_STATUSES, Job, JobStatus
from storage.postgres.base import Connection, PostgresBase, Query
from storage.rows import job_from_row
from storage.rules import status_tuple, utc_day

SQL_CLAIM_DELIVERY: Final[Query] = (
    "UPDATE jobs SET status = CASE status WHEN 'finished' THEN 'posting' ELSE 'reporting' END,"
    " post_claims = post_claims + 1, updated_at = %s"
    " WHERE id = %s AND status IN ('finished', 'failed') AND platform = ANY(%s)"
    " AND (owner IS NULL OR owner = %s)"
    " AND (next_poll_at IS NULL OR next_poll_at <= %s) RETURNING *"
)
SQL_CHARGE_CREDITS: Final[Query] = (
    "INSERT INTO usage (platform, user_id, day, kind, job_id, credits, created_at)"
    " VALUES (%s, %s, %s, 'credits', %s, %s, %s) ON CONFLICT (job_id, kind) DO NOTHING"
)
SQL_NEXT_POLL: Final[Query] = (
    "SELECT MIN(next_poll_at) AS at FROM jobs WHERE status = ANY(%s) AND next_poll_at > %s"
    " AND (%s::text IS NULL OR owner = %s)"
)
SQL_MARK_POLLED: Final[Query] = "UPDATE jobs SET last_polled_at = %s WHERE id = ANY(%s)"
SQL_COUNT_UNFINISHED: Final[Query] = (
    "SELECT status, platform, COUNT(*) AS n FROM jobs WHERE status = ANY(%s)"
    " GROUP BY status, platform"
)


class PostgresJobTracking(PostgresBase):
    """Tracker queries and delivery claims of :class:`storage.postgres.PostgresStore`."""

    async def claim_delivery(
        self, job_id: str, platforms: Iterable[str], due_by: float
    ) -> Job | None:
        """``finished → posting`` / ``failed → reporting`` in one transaction with the credit
        charge (see :meth:`storage.DeliveryClaims.claim_delivery`)."""
        allowed = list(platforms)
        if not allowed:
            return None
        now = self._now()

        async def work(conn: Connection) -> Job | None:
            values = (now, job_id, allowed, self._process_id, due_by)
            cursor = await conn.execute(SQL_CLAIM_DELIVERY, values)
            row = await cursor.fetchone()
            if row is None:
                return None
            job = job_from_row(row)
            if job.status == "posting" and job.family == "task" and job.credits:
                charge = (job.platform, job.requester_id, utc_day(now), job.id, job.credits)
                await conn.execute(SQL_CHARGE_CREDITS, (*charge, now))
            return job

        return await self._attempt(work, transaction=True)

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
        """Jobs in ``statuses``, oldest first (see ``JobTracking.list_unfinished_jobs``)."""
        conditions: list[sql.Composable] = [sql.SQL("status = ANY(%s)")]
        values: list[Any] = [list(status_tuple(statuses))]
        if family is not None:
            conditions.append(sql.SQL("family = %s"))
            values.append(family)
        if after is not None:
            conditions.append(sql.SQL("(created_at, id) > (%s, %s)"))
            values += [after.created_at, after.id]
        if webhook_quiet_since is not None:
            conditions.append(sql.SQL("(last_webhook_at IS NULL OR last_webhook_at < %s)"))
            values.append(webhook_quiet_since)
        if due_at is not None:
            conditions.append(sql.SQL("(next_poll_at IS NULL OR next_poll_at <= %s)"))
            values.append(due_at)
        if created_before is not None:
            conditions.append(sql.SQL("created_at < %s"))
            values.append(created_before)
        if owner is not None:
            conditions.append(sql.SQL("owner = %s"))
            values.append(owner)
        statement = sql.SQL("SELECT * FROM jobs WHERE {} ORDER BY created_at, id").format(
            sql.SQL(" AND ").join(conditions)
        )
        if limit is not None:
            statement = sql.Composed([statement, sql.SQL(" LIMIT %s")])
            values.append(limit)
        async with self._connection() as conn:
            cursor = await conn.execute(statement, values)
            return [job_from_row(row) for row in await cursor.fetchall()]

    async def next_poll_after(
        self, statuses: Iterable[JobStatus], after: float, *, owner: str | None = None
    ) -> float | None:
        """The earliest ``next_poll_at`` later than ``after`` among jobs in ``statuses`` (only
        ``owner``'s, when given)."""
        values = (list(status_tuple(statuses)), after, owner, owner)
        row = await self._fetch_one(SQL_NEXT_POLL, values)
        return None if row is None or row["at"] is None else float(row["at"])

    async def mark_polled(self, job_ids: Iterable[str], *, at: float | None = None) -> int:
        """Set ``last_polled_at`` (default: now) on many jobs in one statement."""
        ids = list(job_ids)
        if not ids:
            return 0
        return await self._execute(SQL_MARK_POLLED, (self._now() if at is None else at, ids))

    async def count_unfinished_jobs(self) -> list[tuple[JobStatus, str, int]]:
        """How many jobs are in each unfinished status, per platform (for metrics)."""
        rows = await self._fetch_all(SQL_COUNT_UNFINISHED, (list(UNFINISHED_STATUSES),))
        return [(row["status"], str(row["platform"]), int(row["n"])) for row in rows]
