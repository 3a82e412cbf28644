"""Creating a job only while its requester is within their limits, in one transaction."""

from __future__ import annotations

from typing import Final

from storage.errors import StorageError
from storage.queries.base import Queries
from storage.queries.jobs import job_from_row
from storage.records.jobs import ACTIVE_STATUSES, Job, JobQuota, NewJob, QuotaRefusal, new_job_id
from storage.rules import check_new_job, utc_day
from storage.sql.dialect import marks
from storage.sql.session import Row, Session, to_json

_ACTIVE: Final = tuple(sorted(ACTIVE_STATUSES))
INSERT_COLUMNS: Final = (
    "id, family, type, status, provider_id, parent_job_id, action, requester_id, platform,"
    " workspace_id, channel_id, thread_id, prompt, parameters, webhook_secret, created_at,"
    " updated_at, owner, lease_until, is_dm"
)
SQL_INSERT_JOB: Final = (
    f"INSERT INTO jobs ({INSERT_COLUMNS}) VALUES ({marks(20)}) ON CONFLICT DO NOTHING RETURNING *"
)
SQL_JOB_EXISTS: Final = "SELECT 1 AS found FROM jobs WHERE id = ?"
SQL_DERIVATIVE: Final = "SELECT * FROM jobs WHERE parent_job_id = ? AND action = ?"
SQL_COUNT_ACTIVE: Final = (
    "SELECT COUNT(*) AS n FROM jobs WHERE platform = ? AND requester_id = ?"
    f" AND status IN ({marks(len(_ACTIVE))})"
)
SQL_CREDITS_TODAY: Final = (
    "SELECT COALESCE(SUM(credits), 0) AS n FROM usage"
    " WHERE platform = ? AND user_id = ? AND day = ?"
)


class AdmissionQueries(Queries):
    """:class:`storage.JobAdmission`."""

    async def create_job_within(
        self, new: NewJob, quota: JobQuota
    ) -> tuple[Job, bool] | QuotaRefusal:
        """Create ``new`` unless its requester is at a limit of ``quota``.

        Counting the requester's active jobs, summing today's credits and inserting the row
        happen in one transaction, serialised per requester (SQLite: ``BEGIN IMMEDIATE``;
        PostgreSQL: the requester's transaction-scoped advisory lock), so concurrent calls
        from any process cannot all pass a cap. Returns ``(job, True)`` when the row was
        created; for a derivative (``parent_job_id`` and ``action`` set) whose pair already
        exists, ``(existing, False)`` — nothing is created, so no limit applies (the pair is
        unique: the same button pressed twice yields one job); a :class:`QuotaRefusal` when a
        limit stops it.
        """
        check_new_job(new)
        derivative = (
            (new.parent_job_id, new.action)
            if new.parent_job_id is not None and new.action is not None
            else None
        )

        async def work(tx: Session) -> tuple[Job, bool] | QuotaRefusal:
            if derivative is not None:
                existing = await tx.fetch_one(SQL_DERIVATIVE, derivative)
                if existing is not None:
                    return job_from_row(existing), False
            if tx.dialect.transaction_lock is not None:
                await tx.execute(
                    tx.dialect.transaction_lock, (f"{new.platform}\x1f{new.requester_id}",)
                )
            now = self._clock()
            refusal = await _quota_refusal(tx, new, quota, now)
            if refusal is not None:
                return refusal
            if new.parent_job_id is not None and not await tx.fetch_one(
                SQL_JOB_EXISTS, (new.parent_job_id,)
            ):
                raise StorageError(f"parent job {new.parent_job_id!r} does not exist")
            row = await self._insert(tx, new, now)
            if row is not None:
                return job_from_row(row), True
            if derivative is not None:
                raced = await tx.fetch_one(SQL_DERIVATIVE, derivative)
                if raced is not None:
                    return job_from_row(raced), False
            raise StorageError("the job conflicts with an existing one (same provider id?)")

        return await self.db.transaction(work)

    async def _insert(self, tx: Session, new: NewJob, now: float) -> Row | None:
        """The inserted row; None when another row's unique key took it (not the id)."""
        if new.id is not None and await tx.fetch_one(SQL_JOB_EXISTS, (new.id,)):
            raise StorageError(f"job id {new.id!r} already exists")
        while True:
            job_id = new.id or new_job_id()
            values = (
                job_id, new.family, new.type, new.status, new.provider_id, new.parent_job_id,
                new.action, new.requester_id, new.platform, new.workspace_id, new.channel_id,
                new.thread_id, new.prompt, to_json(dict(new.parameters)), new.webhook_secret,
                now, now, self.process_id, now + self.lease_seconds, new.is_dm,
            )  # fmt: skip
            row = await tx.fetch_one(SQL_INSERT_JOB, values)
            if row is not None or new.id is not None:
                return row
            if await tx.fetch_one(SQL_JOB_EXISTS, (job_id,)) is None:
                return None


async def _quota_refusal(
    tx: Session, new: NewJob, quota: JobQuota, now: float
) -> QuotaRefusal | None:
    """The limit of ``quota`` that ``new``'s requester is at, if any."""
    if quota.max_active > 0:
        row = await tx.fetch_one(SQL_COUNT_ACTIVE, (new.platform, new.requester_id, *_ACTIVE))
        active = int(row["n"]) if row else 0
        if active >= quota.max_active:
            return QuotaRefusal("max_active", active, quota.max_active)
    if quota.max_daily_credits > 0:
        usage = (new.platform, new.requester_id, utc_day(now))
        row = await tx.fetch_one(SQL_CREDITS_TODAY, usage)
        credits = int(row["n"]) if row else 0
        if credits >= quota.max_daily_credits:
            return QuotaRefusal("max_daily_credits", credits, quota.max_daily_credits)
    return None
