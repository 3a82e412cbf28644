"""Creating a job only while its requester is within their limits, in one transaction."""

from __future__ import annotations

from sqlite_utils import Database

from storage.job_records import ACTIVE_STATUSES, Job, JobQuota, NewJob, QuotaRefusal
from storage.rows import job_from_row
from storage.rules import check_new_job, utc_day
from storage.sqlite.base import StoreBase
from storage.sqlite.jobs import (
    SQL_COMMANDED,
    SQL_DERIVATIVE,
    SQL_INSERT_JOB,
    SQL_JOB_BY_ID,
    check_parent,
    fresh_id,
    insert_values,
)
from storage.sqlite.ledger import SQL_USAGE_FOR_USER
from storage.sqlite.sql import fetch_one, placeholders, write_transaction

_ACTIVE = tuple(sorted(ACTIVE_STATUSES))
SQL_COUNT_ACTIVE_JOBS = (
    "SELECT COUNT(*) FROM jobs WHERE platform = ? AND requester_id = ?"
    f" AND status IN ({placeholders(len(_ACTIVE))})"
)


def quota_refusal(
    db: Database, platform: str, requester_id: str, quota: JobQuota, now: float, pending: int = 0
) -> QuotaRefusal | None:
    """The limit of ``quota`` that the requester is at, counting ``pending`` jobs as active,
    if any."""
    if quota.max_active > 0:
        row = db.conn.execute(SQL_COUNT_ACTIVE_JOBS, (platform, requester_id, *_ACTIVE)).fetchone()
        active = int(row[0]) + pending
        if active >= quota.max_active:
            return QuotaRefusal("max_active", active, quota.max_active)
    if quota.max_daily_credits > 0:
        usage = (platform, requester_id, utc_day(now))
        credits = int(db.conn.execute(SQL_USAGE_FOR_USER, usage).fetchone()[2])
        if credits >= quota.max_daily_credits:
            return QuotaRefusal("max_daily_credits", credits, quota.max_daily_credits)
    return None


class SqliteJobAdmission(StoreBase):
    """The quota-checked job creation of :class:`storage.sqlite.SqliteStore`."""

    async def create_job_within(
        self, new: NewJob, quota: JobQuota
    ) -> tuple[Job, bool] | QuotaRefusal:
        """Create ``new`` unless its requester is at a limit of ``quota``.

        Counting the requester's active jobs, summing today's credits and inserting the row
        happen in one ``BEGIN IMMEDIATE`` transaction, so concurrent calls (even from several
        processes) cannot all pass a cap. Returns ``(job, True)`` when the row was created; for
        a derivative (``parent_job_id`` and ``action`` set) whose pair already exists,
        ``(existing, False)`` — nothing is created, so no limit applies (the pair is unique:
        the same button pressed twice yields one job), and likewise for a command whose
        ``command_key`` a job already has; a :class:`QuotaRefusal` when a limit stops it.
        """
        check_new_job(new)
        derivative = (
            (new.parent_job_id, new.action)
            if new.parent_job_id is not None and new.action is not None
            else None
        )

        def work(db: Database) -> tuple[Job, bool] | QuotaRefusal:
            now = self._now()
            with write_transaction(db):
                if new.command_key is not None:
                    existing = fetch_one(db, SQL_COMMANDED, (new.command_key,))
                    if existing is not None:
                        return job_from_row(existing), False
                if derivative is not None:
                    existing = fetch_one(db, SQL_DERIVATIVE, derivative)
                    if existing is not None:
                        return job_from_row(existing), False
                refusal = quota_refusal(db, new.platform, new.requester_id, quota, now)
                if refusal is not None:
                    return refusal
                check_parent(db, new.parent_job_id)
                job_id = fresh_id(db, new)
                lease = (self._process_id, now + self._lease_seconds)
                db.conn.execute(SQL_INSERT_JOB, insert_values(new, job_id, now, *lease))
                row = fetch_one(db, SQL_JOB_BY_ID, (job_id,))
            assert row is not None
            return job_from_row(row), True

        return await self._call(work)

    async def quota_refusal(
        self, platform: str, requester_id: str, quota: JobQuota, *, pending: int = 0
    ) -> QuotaRefusal | None:
        """The limit of ``quota`` the requester is at now (``pending`` counted as active
        jobs), or None; reads only."""
        return await self._call(
            lambda db: quota_refusal(db, platform, requester_id, quota, self._now(), pending)
        )
