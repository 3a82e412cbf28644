"""The storage interfaces about jobs: reading and changing them, admission within limits,
tracking and leasing unfinished ones, delivery claims, history, and the links from platform
messages to jobs (see :mod:`storage.interfaces` for the rules every interface follows)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, Protocol

from storage.records.job_params import ResultChange
from storage.records.jobs import (
    UNFINISHED_STATUSES,
    Job,
    JobMessage,
    JobMessageKind,
    JobMove,
    JobQuota,
    JobStatus,
    Lease,
    NewJob,
    ProcessInfo,
    QuotaRefusal,
)


class JobReader(Protocol):
    """Reading one job."""

    async def get_job(self, job_id: str) -> Job | None:
        """The job with this id, or None."""


class TaskLookup(Protocol):
    """Finding a job by the provider's id for it."""

    async def job_for_task(self, task_id: str) -> Job | None:
        """The image task job (family ``task``) the provider knows as ``task_id``, or None."""


class JobWriter(JobReader, Protocol):
    """Changing jobs: compare-and-set status moves and field updates."""

    async def transition(
        self,
        job_id: str,
        from_statuses: JobStatus | Iterable[JobStatus],
        to_status: JobStatus,
        *,
        links: Sequence[JobMessage] = (),
        fence: Lease | None = None,
        **fields: Any,
    ) -> bool:
        """Move the job to ``to_status`` (setting ``fields``) only if its status is one of
        ``from_statuses``; True if this call made the move. Among concurrent callers (in any
        process) exactly one wins. ``links`` are committed with the move, only when it
        happened. With ``fence``, only while that lease is still the job's (its owner and
        generation): the owner's own steps use it, so a process that lost the job (taken over
        while it stalled) changes nothing. Entering ``finished``, ``failed`` or
        ``create_failed`` stamps ``finished_at`` unless given or already set. A move
        ``JOB_TRANSITIONS`` does not allow raises :class:`StorageError`."""

    async def transition_many(self, moves: Sequence[JobMove]) -> list[bool]:
        """:meth:`transition` for each of ``moves`` (without links), sent to the database
        together: moves alike (the same statuses and field names) go as one batch, one round
        trip on PostgreSQL. Each is its own compare-and-set; whether each moved, in order."""

    async def update_job(self, job_id: str, **fields: Any) -> bool:
        """Set fields (see ``storage.rules.UPDATABLE_FIELDS``; JSON fields take Python values)
        whatever the status; False if the job does not exist."""

    async def change_job_result(self, job_id: str, change: ResultChange) -> Job | None:
        """Replace the job's result with ``change(stored result)`` in one step: no other
        change of that job (in any process) comes between the read and the write, so
        concurrent changes of different keys all stay. ``change`` returning None writes
        nothing. The job afterwards; None if it does not exist."""


class JobHistory(Protocol):
    """Recent jobs: a requester's, and everyone's posted ones."""

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

    async def recent_posted_jobs(self, limit: int) -> list[Job]:
        """The newest jobs whose result was posted, of every requester and platform, newest
        first, at most ``limit`` (how long jobs take on this deployment)."""


class JobAdmission(Protocol):
    """Creating jobs within a requester's limits."""

    async def create_job_within(
        self, new: NewJob, quota: JobQuota
    ) -> tuple[Job, bool] | QuotaRefusal:
        """Create ``new`` unless its requester is at a limit of ``quota`` (counted and
        inserted atomically, so concurrent calls from any process cannot all pass a cap).
        ``(job, True)`` when created; for a derivative whose (``parent_job_id``, ``action``)
        pair exists, or a job with the same ``command_key``, ``(existing, False)``; a
        :class:`QuotaRefusal` when a limit stops it."""

    async def quota_refusal(
        self, platform: str, requester_id: str, quota: JobQuota, *, pending: int = 0
    ) -> QuotaRefusal | None:
        """The limit of ``quota`` the requester is at now, counting ``pending`` jobs about to
        be created as active ones; None when a new job fits. Reads only: a check before
        costly work, which :meth:`create_job_within` makes again when it writes."""


class JobTracking(Protocol):
    """What the tracker queries: unfinished jobs, due times, poll stamps."""

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
        """Jobs whose status is in ``statuses``, oldest first (``created_at``, then ``id``).
        ``after`` continues a page after that job; ``webhook_quiet_since`` drops jobs that got
        a webhook at or after that time; ``due_at`` drops jobs whose ``next_poll_at`` is later;
        ``created_before`` keeps only jobs created before that time; ``owner`` keeps only the
        jobs that process holds."""

    async def unfinished_job_ids(
        self,
        statuses: Iterable[JobStatus],
        *,
        due_at: float | None = None,
        owner: str | None = None,
    ) -> list[str]:
        """The ids of the jobs :meth:`list_unfinished_jobs` would list with these filters,
        oldest first: one column, for callers that need no more (the tracker's delivery pass
        reads it every round)."""

    async def next_poll_after(
        self, statuses: Iterable[JobStatus], after: float, *, owner: str | None = None
    ) -> float | None:
        """The earliest ``next_poll_at`` later than ``after`` among jobs in ``statuses`` (only
        ``owner``'s, when given)."""

    async def mark_polled(self, job_ids: Iterable[str], *, at: float | None = None) -> int:
        """Set ``last_polled_at`` (default: now) on many jobs at once."""


class JobCounts(Protocol):
    """How many jobs are where, for metrics."""

    async def count_unfinished_jobs(self) -> list[tuple[JobStatus, str, int]]:
        """How many jobs are in each unfinished status, per platform."""


class JobLeasing(Protocol):
    """Which process follows which job. A job is created leased to the process that creates
    it; the owner's heartbeat renews its leases; a lease that ran out (its process died or lost
    the database) is taken over by another process with an adapter for the job's platform.
    This handle acts for one process, :attr:`process_id`."""

    @property
    def process_id(self) -> str:
        """This process's identity as an owner of jobs."""

    @property
    def lease_seconds(self) -> float:
        """How long a lease lasts without a heartbeat."""

    @property
    def shared(self) -> bool:
        """Whether other processes may use this database at the same time (PostgreSQL);
        SQLite belongs to one process at a time."""

    async def heartbeat(self, process: ProcessInfo) -> frozenset[str]:
        """Renew this process's leases on its unfinished jobs for :attr:`lease_seconds` and
        record it as alive (with ``process``); the ids of the jobs it holds (a job it was
        working on that is missing was taken over: it stops working on it)."""

    async def fair_share(self, platforms: Iterable[str]) -> int:
        """How many unfinished jobs on ``platforms`` this process should hold: for each
        platform, its unfinished jobs divided among the live processes serving it (rounded
        up). A process takes over at most its share, and gives back what it holds beyond it
        (:meth:`shed_leases`), so the load evens out when a process joins."""

    async def shed_leases(self, count: int) -> int:
        """Give up to ``count`` of this process's jobs in flight at the provider (the newest
        first; never one being created or delivered) back to no owner, for other processes to
        claim; how many."""

    async def claim_jobs(
        self, platforms: Iterable[str], *, limit: int, take_live: bool = False
    ) -> list[Job]:
        """Take up to ``limit`` unfinished jobs on ``platforms`` that no process holds (never
        leased, or the lease ran out), oldest first, skipping rows another claimer is taking;
        each claim is a new lease (its generation goes up).
        With ``take_live`` also other processes' live leases: only when none can be running
        (SQLite's one process, at start). The jobs as they were, now owned by this process."""

    async def release_leases(self) -> int:
        """End this process's leases now (a clean stop), so others take its jobs at once, and
        drop it from the live processes; how many were released."""

    async def wake_owner(self, job: Job) -> None:
        """Ask ``job``'s owner (another process) to look at it now (``LISTEN``/``NOTIFY`` on
        PostgreSQL; nothing to do where the database has one process)."""

    def wakeups(self) -> AsyncIterator[str]:
        """Ids of the jobs other processes asked this one to look at, as they come; raises
        :class:`StorageError` when the connection is lost. Empty on an unshared database."""


class DeliveryClaims(Protocol):
    """Claiming a finished or failed job for posting, exactly once."""

    async def claim_delivery(
        self, job_id: str, platforms: Iterable[str], due_by: float
    ) -> Job | None:
        """``finished → posting`` or ``failed → reporting`` for a job this process owns (or
        nobody does) on one of ``platforms`` whose next attempt is due by ``due_by``, counting
        the claim in ``post_claims`` and charging a task's credits to the ledger once per
        job. The claimed job, or None (concurrent callers cannot both win)."""


class MessageLinks(Protocol):
    """The platform message → job map behind every button."""

    async def link_message(
        self,
        platform: str,
        channel_id: str,
        message_id: str,
        job_id: str,
        kind: JobMessageKind = "result",
    ) -> None:
        """Map one platform message to a job (re-linking a message moves it)."""

    async def job_for_message(self, platform: str, channel_id: str, message_id: str) -> Job | None:
        """The job a platform message belongs to (the button-press lookup), or None."""
