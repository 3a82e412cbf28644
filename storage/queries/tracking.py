"""What the tracker asks of jobs: unfinished ones, due times, poll stamps, counts, the delivery
claim, and recent jobs (a requester's, and everyone's posted ones)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from storage.errors import StorageError
from storage.queries.base import Queries
from storage.queries.jobs import job_from_row
from storage.records.jobs import UNFINISHED_STATUSES, Job, JobStatus
from storage.rules import status_tuple, utc_day
from storage.sql.dialect import marks
from storage.sql.session import Session

_UNFINISHED: Final = tuple(sorted(UNFINISHED_STATUSES))
SQL_UNFINISHED: Final = "SELECT * FROM jobs WHERE {} ORDER BY created_at, id"
SQL_UNFINISHED_IDS: Final = "SELECT id FROM jobs WHERE {} ORDER BY created_at, id"
FILTERS: Final = {
    "family": "family = ?",
    "webhook_quiet_since": "(last_webhook_at IS NULL OR last_webhook_at < ?)",
    "due_at": "(next_poll_at IS NULL OR next_poll_at <= ?)",
    "created_before": "created_at < ?",
    "owner": "owner = ?",
}
"""``list_unfinished_jobs``' filters (see :class:`storage.JobTracking`)."""
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
    "SELECT MIN(next_poll_at) AS at FROM jobs WHERE status IN ({}) AND next_poll_at > ?"
)
SQL_RECENT_POSTED: Final = (
    "SELECT * FROM jobs WHERE status = 'posted' ORDER BY created_at DESC, id DESC LIMIT ?"
)
SQL_COUNT_UNFINISHED: Final = (
    f"SELECT status, platform, COUNT(*) AS n FROM jobs WHERE status IN ({marks(len(_UNFINISHED))})"
    " GROUP BY status, platform"
)


def _unfinished_where(
    statuses: Iterable[JobStatus], filters: dict[str, Any]
) -> tuple[list[str], list[Any]]:
    """The conditions and values of an unfinished-jobs listing (see ``FILTERS``)."""
    chosen = status_tuple(statuses)
    conditions = [f"status IN ({marks(len(chosen))})"]
    values: list[Any] = list(chosen)
    for name, value in filters.items():
        if name not in FILTERS:
            raise StorageError(f"no filter {name!r} for unfinished jobs")
        if value is not None:
            conditions.append(FILTERS[name])
            values.append(value)
    return conditions, values


class TrackingQueries(Queries):
    """:class:`storage.JobTracking`, :class:`storage.JobCounts`,
    :class:`storage.DeliveryClaims` and :class:`storage.JobHistory`."""

    async def claim_delivery(
        self, job_id: str, platforms: Iterable[str], due_by: float
    ) -> Job | None:
        """One ``UPDATE … RETURNING`` and the credit charge, in one transaction."""
        allowed = tuple(platforms)
        if not allowed:
            return None
        now = self._clock()
        claim = SQL_CLAIM_DELIVERY.format(marks(len(allowed)))

        async def work(tx: Session) -> Job | None:
            row = await tx.fetch_one(claim, (now, job_id, *allowed, self.process_id, due_by))
            if row is None:
                return None
            job = job_from_row(row)
            if job.status == "posting" and job.family == "task" and job.credits:
                charge = (job.platform, job.requester_id, utc_day(now), job.id, job.credits)
                await tx.execute(SQL_CHARGE_CREDITS, (*charge, now))
            return job

        return await self.db.transaction(work, repeatable=True)

    async def list_unfinished_jobs(
        self,
        statuses: Iterable[JobStatus] = UNFINISHED_STATUSES,
        *,
        limit: int | None = None,
        after: Job | None = None,
        **filters: Any,
    ) -> list[Job]:
        conditions, values = _unfinished_where(statuses, filters)
        if after is not None:
            conditions.append("(created_at, id) > (?, ?)")
            values += [after.created_at, after.id]
        query = SQL_UNFINISHED.format(" AND ".join(conditions))
        if limit is not None:
            query += " LIMIT ?"
            values.append(limit)
        return [job_from_row(row) for row in await self.db.fetch_all(query, values)]

    async def unfinished_job_ids(
        self,
        statuses: Iterable[JobStatus],
        *,
        due_at: float | None = None,
        owner: str | None = None,
    ) -> list[str]:
        conditions, values = _unfinished_where(statuses, {"due_at": due_at, "owner": owner})
        query = SQL_UNFINISHED_IDS.format(" AND ".join(conditions))
        return [str(row["id"]) for row in await self.db.fetch_all(query, values)]

    async def next_poll_after(
        self, statuses: Iterable[JobStatus], after: float, *, owner: str | None = None
    ) -> float | None:
        chosen = status_tuple(statuses)
        query = SQL_NEXT_POLL.format(marks(len(chosen)))
        values: tuple[Any, ...] = (*chosen, after)
        if owner is not None:
            query += " AND owner = ?"
            values += (owner,)
        row = await self.db.fetch_one(query, values)
        return None if row is None or row["at"] is None else float(row["at"])

    async def mark_polled(self, job_ids: Iterable[str], *, at: float | None = None) -> int:
        ids = list(job_ids)
        if not ids:
            return 0
        stamp = self._clock() if at is None else at
        mark = f"UPDATE jobs SET last_polled_at = ? WHERE id IN ({marks(len(ids))})"
        return await self.db.execute(mark, (stamp, *ids), repeatable=True)

    async def count_unfinished_jobs(self) -> list[tuple[JobStatus, str, int]]:
        rows = await self.db.fetch_all(SQL_COUNT_UNFINISHED, _UNFINISHED)
        return [(row["status"], str(row["platform"]), int(row["n"])) for row in rows]

    async def recent_jobs(
        self,
        platform: str,
        requester_id: str,
        *,
        workspace_id: str | None = None,
        statuses: Iterable[JobStatus] = ("posted",),
        limit: int = 10,
    ) -> list[Job]:
        chosen = status_tuple(tuple(statuses))
        in_workspace = "" if workspace_id is None else " AND workspace_id = ?"
        query = (
            f"SELECT * FROM jobs WHERE platform = ? AND requester_id = ?"
            f" AND status IN ({marks(len(chosen))}){in_workspace}"
            " ORDER BY created_at DESC, id DESC LIMIT ?"
        )
        where = () if workspace_id is None else (workspace_id,)
        rows = await self.db.fetch_all(
            query, (platform, requester_id, *chosen, *where, max(limit, 0))
        )
        return [job_from_row(row) for row in rows]

    async def recent_posted_jobs(self, limit: int) -> list[Job]:
        rows = await self.db.fetch_all(SQL_RECENT_POSTED, (max(limit, 0),))
        return [job_from_row(row) for row in rows]
