"""What the tracker asks of jobs: unfinished ones, due times, poll stamps, counts, the delivery
claim, and recent jobs (a requester's, and everyone's posted ones)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from storage.queries.base import Clock, Owner
from storage.queries.grouped import Grouped
from storage.queries.jobs import job_from_row, status_tuple
from storage.records.jobs import (
    UNFINISHED_STATUSES,
    Job,
    JobBrief,
    JobChannel,
    JobStatus,
    RunningJob,
)
from storage.records.usage import utc_day
from storage.sql.dialect import marks
from storage.sql.session import Database, Session, record

_UNFINISHED: Final = tuple(sorted(UNFINISHED_STATUSES))
SQL_UNFINISHED: Final = "SELECT {} FROM jobs WHERE {} ORDER BY created_at, id"
SQL_JOB_CHANNEL: Final = "id, platform, workspace_id, channel_id"
FILTERS: Final = {
    "family": "family = ?",
    "webhook_quiet_since": "(last_webhook_at IS NULL OR last_webhook_at < ?)",
    "due_at": "(next_poll_at IS NULL OR next_poll_at <= ?)",
    "created_before": "created_at < ?",
    "owner": "owner = ?",
}
"""``list_unfinished_jobs``' filters."""
BRIEF_COLUMNS: Final = (
    "id, family, status, provider_id, provider_key, created_at, last_polled_at, webhook_secret"
)
"""What :class:`JobBrief` reads."""
RUNNING_COLUMNS: Final = "id, platform, requester_id, owner, progress_message_id"
"""What :class:`RunningJob` reads."""
SQL_JOBS_BY_IDS: Final = "SELECT * FROM jobs WHERE id IN ({})"
SQL_CLAIM_DELIVERY: Final = (
    "UPDATE jobs SET status = CASE status WHEN 'finished' THEN 'posting' ELSE 'reporting' END,"
    " post_claims = post_claims + 1, updated_at = ?"
    " WHERE id IN ({}) AND status IN ('finished', 'failed') AND platform IN ({})"
    " AND (owner IS NULL OR owner = ?)"
    " AND (next_poll_at IS NULL OR next_poll_at <= ?) RETURNING *"
)
SQL_CHARGE_CREDITS: Final = (
    "INSERT INTO usage (platform, user_id, day, kind, job_id, credits, created_at)"
    " VALUES (?, ?, ?, 'credits', ?, ?, ?) ON CONFLICT (job_id, kind) DO NOTHING"
)
SQL_ERASE_JOB: Final = (
    "UPDATE usage SET job_id = NULL WHERE job_id = ?",
    "UPDATE jobs SET parent_job_id = NULL WHERE parent_job_id = ?",
    "DELETE FROM jobs WHERE id = ?",
)
"""A job erased instead of delivered: its charge stays, no longer linked to it, under the name
its requester's was charged by (:func:`storage.queries.retention.erased_name`: as ``/forget-me``
keeps the usage a budget's window still counts, until the purge folds it into anonymous totals),
the jobs made from it lose the link, and its row goes (its message links with it)."""
SQL_NEXT_POLL: Final = (
    "SELECT MIN(next_poll_at) AS at FROM jobs WHERE status IN ({}) AND next_poll_at > ?"
)
SQL_RECENT_POSTED: Final = (
    "SELECT * FROM jobs WHERE status = 'posted' ORDER BY created_at DESC, id DESC LIMIT ?"
)
SQL_HOLDS: Final = (
    f"SELECT 1 FROM jobs WHERE owner = ? AND status IN ({marks(len(_UNFINISHED))}) LIMIT 1"
)
SQL_COUNT_UNFINISHED: Final = (
    f"SELECT status, platform, COUNT(*) AS n FROM jobs WHERE status IN ({marks(len(_UNFINISHED))})"
    " GROUP BY status, platform"
)


def _listing(
    columns: str,
    statuses: Iterable[JobStatus],
    filters: dict[str, Any],
    limit: int | None,
    after: Job | JobBrief | None,
) -> tuple[str, list[Any]]:
    """An unfinished-jobs listing of ``columns``, oldest first, after ``after`` (a page's
    last job), at most ``limit``."""
    conditions, values = _unfinished_where(statuses, filters)
    if after is not None:
        conditions.append("(created_at, id) > (?, ?)")
        values += [after.created_at, after.id]
    query = SQL_UNFINISHED.format(columns, " AND ".join(conditions))
    if limit is not None:
        query += " LIMIT ?"
        values.append(limit)
    return query, values


def _unfinished_where(
    statuses: Iterable[JobStatus], filters: dict[str, Any]
) -> tuple[list[str], list[Any]]:
    """The conditions and values of an unfinished-jobs listing (see ``FILTERS``)."""
    chosen = status_tuple(statuses)
    conditions = [f"status IN ({marks(len(chosen))})"]
    values: list[Any] = list(chosen)
    for name, value in filters.items():
        if value is not None:
            conditions.append(FILTERS[name])
            values.append(value)
    return conditions, values


def charged_when_claimed(job: Job) -> bool:
    """Whether the claim of ``job``'s delivery charges its credits: a finished task's result is
    posted; a failed one was not charged, except a cancelled one (``result["cancelled"]``), whose
    task the provider ran to its end (and which its report hides)."""
    return job.status == "posting" or bool(job.result.get("cancelled"))


Claim = tuple[str, tuple[str, ...], float]
"""One delivery claim asked: the job's id, the platforms it may be on, and its due time."""


@dataclass
class DeliveryClaims:
    """Claiming a finished or failed job for posting, exactly once. The claims a process asks
    for while one is under way go together in one transaction
    (:class:`~storage.queries.grouped.Grouped`): one ``UPDATE … RETURNING`` for their jobs and
    one batch of charges."""

    db: Database
    clock: Clock
    owner: Owner

    async def claim_delivery(
        self, job_id: str, platforms: Iterable[str], due_by: float
    ) -> Job | None:
        """``finished → posting`` or ``failed → reporting`` for a job this process owns (or
        nobody does) on one of ``platforms`` whose next attempt is due by ``due_by``, counting
        the claim in ``post_claims`` and charging a task's credits to the ledger once per
        job (:func:`charged_when_claimed`), in one transaction (with the claims asked
        together, each due by the latest ``due_by`` among them, a time already past when the
        claims run). The claimed job, or None (concurrent callers cannot both win)."""
        allowed = tuple(platforms)
        if not allowed:
            return None
        return await self._claims((job_id, allowed, due_by))

    async def erase(self, job_id: str) -> bool:
        """Erase a job claimed for delivery whose requester was forgotten while it ran
        (:func:`storage.queries.retention.forgotten`), in one transaction (see
        :data:`SQL_ERASE_JOB`); whether its row went."""

        async def work(tx: Session) -> bool:
            deleted = 0
            for statement in SQL_ERASE_JOB:
                deleted = await tx.execute(statement, (job_id,))
            return deleted == 1

        return await self.db.transaction(work, repeatable=True)

    @functools.cached_property
    def _claims(self) -> Grouped[Claim, Job | None]:
        return Grouped(self._claim_together)

    async def _claim_together(self, batch: Sequence[Claim]) -> list[Job | None]:
        """One transaction for ``batch``: one claim statement per set of platforms asked (one
        in practice), then the charges of the claimed tasks; a job asked twice goes to the
        first asking."""
        now = self.clock()
        owner = self.owner.process_id
        asked: dict[tuple[str, ...], list[Claim]] = {}
        for claim in batch:
            asked.setdefault(claim[1], []).append(claim)

        async def work(tx: Session) -> list[Job | None]:
            claimed: dict[tuple[str, tuple[str, ...]], Job] = {}
            for allowed, claims in asked.items():
                ids = list(dict.fromkeys(job_id for job_id, _, _ in claims))
                due_by = max(due for _, _, due in claims)
                claim = SQL_CLAIM_DELIVERY.format(marks(len(ids)), marks(len(allowed)))
                rows = await tx.fetch_all(claim, (now, *ids, *allowed, owner, due_by))
                for row in rows:
                    job = job_from_row(row)
                    claimed[job.id, allowed] = job
            charges = [
                (job.platform, job.requester_id, utc_day(now), job.id, job.credits, now)
                for job in claimed.values()
                if job.family == "task" and job.credits and charged_when_claimed(job)
            ]
            if charges:
                await tx.execute_many(SQL_CHARGE_CREDITS, charges)
            return [claimed.pop((job_id, allowed), None) for job_id, allowed, _ in batch]

        return await self.db.transaction(work, repeatable=True)


@dataclass
class JobTracking:
    """What the tracker queries: unfinished jobs, due times, poll stamps; and how many jobs
    are where, for metrics."""

    db: Database
    clock: Clock

    async def list_unfinished_jobs(
        self,
        statuses: Iterable[JobStatus] = UNFINISHED_STATUSES,
        *,
        family: str | None = None,
        limit: int | None = None,
        after: Job | JobBrief | None = None,
        webhook_quiet_since: float | None = None,
        due_at: float | None = None,
        created_before: float | None = None,
        owner: str | None = None,
    ) -> list[Job]:
        """Jobs whose status is in ``statuses``, oldest first (``created_at``, then ``id``).
        ``after`` continues a page after that job; ``webhook_quiet_since`` drops jobs that got
        a webhook at or after that time; ``due_at`` drops jobs whose ``next_poll_at`` is later;
        ``created_before`` keeps only jobs created before that time; ``owner`` keeps only the
        jobs that process holds."""
        filters = {
            "family": family,
            "webhook_quiet_since": webhook_quiet_since,
            "due_at": due_at,
            "created_before": created_before,
            "owner": owner,
        }
        query, values = _listing("*", statuses, filters, limit, after)
        return [job_from_row(row) for row in await self.db.fetch_all(query, values)]

    async def list_job_briefs(
        self,
        statuses: Iterable[JobStatus],
        *,
        family: str | None = None,
        limit: int | None = None,
        after: Job | JobBrief | None = None,
        webhook_quiet_since: float | None = None,
        owner: str | None = None,
    ) -> list[JobBrief]:
        """:meth:`list_unfinished_jobs` with these filters, read as :class:`JobBrief`: a few
        columns, no JSON (the tracker's poll round reads every job in flight each second and
        needs the whole row only of a job whose task moved: :meth:`whole_jobs`)."""
        filters = {"family": family, "webhook_quiet_since": webhook_quiet_since, "owner": owner}
        query, values = _listing(BRIEF_COLUMNS, statuses, filters, limit, after)
        return [
            JobBrief(
                id=row["id"],
                family=row["family"],
                status=row["status"],
                provider_id=row["provider_id"],
                provider_key=row["provider_key"],
                created_at=row["created_at"],
                last_polled_at=row["last_polled_at"],
                webhook=bool(row["webhook_secret"]),
            )
            for row in await self.db.fetch_all(query, values)
        ]

    async def list_running(
        self, statuses: Iterable[JobStatus], *, limit: int | None = None
    ) -> list[RunningJob]:
        """:meth:`list_unfinished_jobs` of every process, read as :class:`RunningJob`: a few
        columns, no JSON (each process's progress ticker lists every job in flight, and
        ticks only those it holds: :meth:`whole_jobs`)."""
        query, values = _listing(RUNNING_COLUMNS, statuses, {}, limit, None)
        return [record(RunningJob, row) for row in await self.db.fetch_all(query, values)]

    async def whole_jobs(self, job_ids: Sequence[str]) -> dict[str, Job]:
        """The jobs with these ids (one statement), by id; an unknown id is left out."""
        unique = list(dict.fromkeys(job_ids))
        if not unique:
            return {}
        rows = await self.db.fetch_all(SQL_JOBS_BY_IDS.format(marks(len(unique))), unique)
        return {job.id: job for job in map(job_from_row, rows)}

    async def unfinished_job_channels(
        self,
        statuses: Iterable[JobStatus],
        *,
        due_at: float | None = None,
        owner: str | None = None,
    ) -> list[JobChannel]:
        """The ids and channels of the jobs :meth:`list_unfinished_jobs` would list with these
        filters, oldest first: four short columns, for callers that need no more (the
        tracker's delivery pass reads it every round)."""
        filters = {"due_at": due_at, "owner": owner}
        query, values = _listing(SQL_JOB_CHANNEL, statuses, filters, None, None)
        return [record(JobChannel, row) for row in await self.db.fetch_all(query, values)]

    async def next_poll_after(
        self, statuses: Iterable[JobStatus], after: float, *, owner: str | None = None
    ) -> float | None:
        """The earliest ``next_poll_at`` later than ``after`` among jobs in ``statuses`` (only
        ``owner``'s, when given)."""
        chosen = status_tuple(statuses)
        query = SQL_NEXT_POLL.format(marks(len(chosen)))
        values: tuple[Any, ...] = (*chosen, after)
        if owner is not None:
            query += " AND owner = ?"
            values += (owner,)
        row = await self.db.fetch_one(query, values)
        return None if row is None or row["at"] is None else float(row["at"])

    async def holds_jobs(self, owner: str) -> bool:
        """Whether ``owner`` holds any unfinished job (one indexed statement: an idle
        process's tracker asks this instead of running its round's listings)."""
        return await self.db.fetch_one(SQL_HOLDS, (owner, *_UNFINISHED)) is not None

    async def mark_polled(self, job_ids: Iterable[str], *, at: float | None = None) -> int:
        """Set ``last_polled_at`` (default: now) on many jobs at once."""
        ids = list(job_ids)
        if not ids:
            return 0
        stamp = self.clock() if at is None else at
        mark = f"UPDATE jobs SET last_polled_at = ? WHERE id IN ({marks(len(ids))})"
        return await self.db.execute(mark, (stamp, *ids), repeatable=True)

    async def count_unfinished_jobs(self) -> list[tuple[JobStatus, str, int]]:
        """How many jobs are in each unfinished status, per platform."""
        rows = await self.db.fetch_all(SQL_COUNT_UNFINISHED, _UNFINISHED)
        return [(row["status"], str(row["platform"]), int(row["n"])) for row in rows]


@dataclass
class JobHistory:
    """Recent jobs: a requester's, and everyone's posted ones."""

    db: Database

    async def recent_jobs(
        self,
        platform: str,
        requester_id: str,
        *,
        workspace_id: str | None = None,
        statuses: Iterable[JobStatus] = ("posted",),
        limit: int = 10,
    ) -> list[Job]:
        """The requester's newest jobs in ``statuses`` (only ``workspace_id``'s when given),
        newest first, at most ``limit``."""
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
        """The newest jobs whose result was posted, of every requester and platform, newest
        first, at most ``limit`` (how long jobs take on this deployment)."""
        rows = await self.db.fetch_all(SQL_RECENT_POSTED, (max(limit, 0),))
        return [job_from_row(row) for row in rows]
