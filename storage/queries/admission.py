"""Admission: creating a job only while its requester is within their limits, in one
transaction."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from storage.errors import StorageError, check_word
from storage.queries.base import Clock, Owner
from storage.queries.jobs import job_from_row
from storage.queries.ledger import spent_of, spent_statement
from storage.queries.retention import erased_name
from storage.records.jobs import (
    ACTIVE_STATUSES,
    JOB_ID_MAX,
    Job,
    JobFamily,
    JobQuota,
    JobStatus,
    KeyRoom,
    KeyUsage,
    NewJob,
    NoKeyRoom,
    QuotaRefusal,
    new_job_id,
)
from storage.records.usage import window_start
from storage.sql.dialect import marks
from storage.sql.session import Database, Row, Session, Values, to_json

_ACTIVE: Final = tuple(sorted(ACTIVE_STATUSES))
INSERT_COLUMNS: Final = (
    "id, family, type, status, provider_id, parent_job_id, action, requester_id, platform,"
    " workspace_id, channel_id, thread_id, prompt, parameters, webhook_secret, created_at,"
    " updated_at, owner, lease_until, is_dm, command_key, provider_key"
)
_JOB_ID_PATTERN: Final = re.compile(rf"[A-Za-z0-9_-]{{1,{JOB_ID_MAX}}}")
SQL_INSERT_JOB: Final = (
    f"INSERT INTO jobs ({INSERT_COLUMNS}) VALUES ({marks(22)}) ON CONFLICT DO NOTHING RETURNING *"
)
SQL_COMMANDED: Final = "SELECT * FROM jobs WHERE command_key = ?"
SQL_JOB_EXISTS: Final = "SELECT 1 AS found FROM jobs WHERE id = ?"
SQL_DERIVATIVE: Final = "SELECT * FROM jobs WHERE parent_job_id = ? AND action = ?"
COUNTS_TOWARD_CAP: Final = "(status != 'cancelled' OR provider_id IS NOT NULL)"
"""An active job counts toward its requester's cap, and its key's ``max_concurrent``, unless it
was cancelled while ``unknown`` (the provider never confirmed it: no ``provider_id``), which gives
its place back at once. A late webhook that adopts its task gives it a ``provider_id``: it counts
once again while the provider runs it (one row per task: ``jobs_by_provider`` is unique), and its
end (``failed``) frees the place."""
SQL_COUNT_ACTIVE: Final = (
    "SELECT COUNT(*) AS n, SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) AS cancelled"
    " FROM jobs WHERE platform = ? AND requester_id = ?"
    f" AND status IN ({marks(len(_ACTIVE))}) AND {COUNTS_TOWARD_CAP}"
)
SQL_KEY_ACTIVE: Final = (
    f"SELECT COUNT(*) AS n FROM jobs WHERE provider_key = ? AND status IN ({marks(len(_ACTIVE))})"
    f" AND {COUNTS_TOWARD_CAP}"
)
SQL_KEY_TASKS: Final = (
    "SELECT COUNT(*) AS n FROM jobs WHERE provider_key = ? AND created_at >= ?"
    " AND status != 'create_failed'"
)
SQL_REKEY: Final = (
    "UPDATE jobs SET provider_key = ?, updated_at = ? WHERE id = ? AND status = 'creating'"
    " RETURNING id"
)
SQL_KEY_USAGE: Final = (
    f"SELECT provider_key, SUM(CASE WHEN status IN ({marks(len(_ACTIVE))})"
    f" AND {COUNTS_TOWARD_CAP} THEN 1 ELSE 0 END)"
    " AS active, SUM(CASE WHEN created_at >= ? AND status != 'create_failed' THEN 1 ELSE 0 END)"
    " AS tasks, SUM(CASE WHEN created_at >= ? THEN COALESCE(credits, 0) ELSE 0 END) AS credits"
    " FROM jobs WHERE provider_key IS NOT NULL"
    f" AND (created_at >= ? OR status IN ({marks(len(_ACTIVE))})) GROUP BY provider_key"
)
KEYS_LOCK: Final = "\x1fprovider keys"
"""The lock (PostgreSQL) that serialises choosing a provider key with room."""


@dataclass
class JobAdmission:
    """Creating jobs within a requester's limits."""

    db: Database
    clock: Clock
    owner: Owner

    async def create_job_within(
        self, new: NewJob, quota: JobQuota, keys: Sequence[KeyRoom] = ()
    ) -> tuple[Job, bool] | QuotaRefusal:
        """Create ``new`` unless its requester is at a limit of ``quota``; a job without a
        ``provider_key`` gets the first of ``keys`` with room (:class:`NoKeyRoom` when none
        has any), counted in the same transaction (over every process).

        Counting the requester's active jobs, summing today's credits and inserting the row
        happen in one transaction, serialised per requester (SQLite: ``BEGIN IMMEDIATE``;
        PostgreSQL: the requester's transaction-scoped advisory lock), so concurrent calls
        from any process cannot all pass a cap. The requester's lock, the look for a job the
        command (or the derivative) already has and the limits' reads go together, in that
        order (one round trip; the credits are read again, under the lock, when its wait
        crossed into another credit window: a day, or an hour for hourly refills), the row in
        a second: the lock is then held over the insert and the commit (and a derivative's
        look for its parent, a capped key's counts). Looking after the lock, a copy of a
        command waiting behind its original finds the original's job instead of counting it
        against a cap. Returns ``(job, True)`` when the row was created; for a derivative
        (``parent_job_id`` and ``action`` set) whose pair already exists, ``(existing,
        False)`` — nothing is created, so no limit applies (the pair is unique: the same button
        pressed twice yields one job), and likewise for a command whose ``command_key`` a job
        already has; a :class:`QuotaRefusal` when a limit stops it. A keyed creation runs once
        more on a fresh connection when the first was lost: repeating it finds the job the
        first may have made.
        """
        check_new_job(new)
        derivative = (
            (new.parent_job_id, new.action)
            if new.parent_job_id is not None and new.action is not None
            else None
        )

        attempts = 0

        async def work(tx: Session) -> tuple[Job, bool] | QuotaRefusal:
            nonlocal attempts
            attempts += 1
            reads: dict[str, tuple[str, Values]] = {}
            if tx.dialect.transaction_lock is not None:
                requester = f"{new.platform}\x1f{new.requester_id}"
                reads["lock"] = (tx.dialect.transaction_lock, (requester,))
            if new.command_key is not None:
                reads["commanded"] = (SQL_COMMANDED, (new.command_key,))
            if derivative is not None:
                reads["derivative"] = (SQL_DERIVATIVE, derivative)
            asked = self.clock()
            reads |= _quota_reads(new.platform, new.requester_id, quota, asked)
            found = dict(zip(reads, await tx.fetch_each(reads.values()), strict=True))
            if commanded := found.get("commanded"):
                job = job_from_row(commanded[0])
                return job, attempts > 1 and _made_by_a_lost_attempt(job, self.owner.process_id)
            if existing := found.get("derivative"):
                return job_from_row(existing[0]), False
            now = self.clock()
            if "spent" in found and window_start(quota.refill, now) != window_start(
                quota.refill, asked
            ):
                found["spent"] = await tx.fetch_all(
                    *spent_statement(new.platform, new.requester_id, quota.refill, now)
                )
            refusal = _quota_refusal_of(found, quota, now)
            if refusal is not None:
                return refusal
            if new.parent_job_id is not None and not await tx.fetch_one(
                SQL_JOB_EXISTS, (new.parent_job_id,)
            ):
                raise StorageError(f"parent job {new.parent_job_id!r} does not exist")
            lease = (self.owner.process_id, now + self.owner.lease_seconds)
            keyed = new
            if new.provider_key is None and keys:
                keyed = replace(new, provider_key=await _key_with_room(tx, keys, now))
            row = await _insert(tx, keyed, now, lease)
            if row is not None:
                return job_from_row(row), True
            if derivative is not None:
                raced = await tx.fetch_one(SQL_DERIVATIVE, derivative)
                if raced is not None:
                    return job_from_row(raced), False
            commanded_now = await _commanded(tx, new)
            if commanded_now is not None:
                return commanded_now, False
            raise StorageError("the job conflicts with an existing one (same provider id?)")

        return await self.db.transaction(work, repeatable=new.command_key is not None)

    async def move_to_key(self, job_id: str, keys: Sequence[KeyRoom]) -> str | None:
        """Give a job still ``creating`` (refused for its key: nothing started) the first of
        ``keys`` with room; its name, or None when the job is no longer ``creating``.
        :class:`NoKeyRoom` when no key has room."""

        async def work(tx: Session) -> str | None:
            now = self.clock()
            name = await _key_with_room(tx, keys, now)
            row = await tx.fetch_one(SQL_REKEY, (name, now, job_id))
            return None if row is None else name

        return await self.db.transaction(work)

    async def key_usage(self) -> dict[str, KeyUsage]:
        """Each provider key's jobs (see :class:`KeyUsage`), by key name."""
        day = window_start("daily", self.clock())
        rows = await self.db.fetch_all(SQL_KEY_USAGE, (*_ACTIVE, day, day, day, *_ACTIVE))
        return {
            str(row["provider_key"]): KeyUsage(
                int(row["active"] or 0), int(row["tasks"] or 0), int(row["credits"] or 0)
            )
            for row in rows
        }

    async def quota_refusal(
        self, platform: str, requester_id: str, quota: JobQuota, *, pending: int = 0
    ) -> QuotaRefusal | None:
        """The limit of ``quota`` the requester is at now, counting ``pending`` jobs about to
        be created as active ones; None when a new job fits. Reads only, outside a
        transaction (sent together, and sent again on a fresh connection when the first was
        lost, as any read): a check before costly work, which :meth:`create_job_within` makes
        again when it writes."""
        now = self.clock()
        reads = _quota_reads(platform, requester_id, quota, now)
        found = dict(
            zip(reads, await self.db.fetch_each(reads.values(), repeatable=True), strict=True)
        )
        return _quota_refusal_of(found, quota, now, pending)


async def _commanded(tx: Session, new: NewJob) -> Job | None:
    if new.command_key is None:
        return None
    row = await tx.fetch_one(SQL_COMMANDED, (new.command_key,))
    return None if row is None else job_from_row(row)


def _made_by_a_lost_attempt(job: Job, process_id: str) -> bool:
    """Whether a keyed job a repeated creation found is the one the first attempt made
    before its connection was lost (this process's, still untouched): then it is this
    call's."""
    return (
        job.owner == process_id
        and job.status == "creating"
        and job.progress_message_id is None
        and job.lease_generation == 0
    )


async def _insert(tx: Session, new: NewJob, now: float, lease: tuple[str, float]) -> Row | None:
    """The inserted row, leased as ``lease`` (owner, until); None when another row's unique
    key took it (not the id)."""
    if new.id is not None and await tx.fetch_one(SQL_JOB_EXISTS, (new.id,)):
        raise StorageError(f"job id {new.id!r} already exists")
    while True:
        job_id = new.id or new_job_id()
        values = (
            job_id, new.family, new.type, new.status, new.provider_id, new.parent_job_id,
            new.action, new.requester_id, new.platform, new.workspace_id, new.channel_id,
            new.thread_id, new.prompt, to_json(dict(new.parameters)), new.webhook_secret,
            now, now, *lease, new.is_dm, new.command_key, new.provider_key,
        )  # fmt: skip
        row = await tx.fetch_one(SQL_INSERT_JOB, values)
        if row is not None or new.id is not None:
            return row
        if await tx.fetch_one(SQL_JOB_EXISTS, (job_id,)) is None:
            return None


async def _key_with_room(tx: Session, keys: Sequence[KeyRoom], now: float) -> str:
    """The first of ``keys`` below its caps (serialised over processes: SQLite's ``BEGIN
    IMMEDIATE``, PostgreSQL's lock on choosing keys, taken only when a cap is counted: the
    first key without caps is chosen at once); :class:`NoKeyRoom` when none is."""
    if keys and keys[0].max_concurrent <= 0 and keys[0].daily_tasks <= 0:
        return keys[0].name
    if tx.dialect.transaction_lock is not None:
        await tx.execute(tx.dialect.transaction_lock, (KEYS_LOCK,))
    for key in keys:
        if key.max_concurrent > 0:
            row = await tx.fetch_one(SQL_KEY_ACTIVE, (key.name, *_ACTIVE))
            if row is not None and int(row["n"]) >= key.max_concurrent:
                continue
        if key.daily_tasks > 0:
            row = await tx.fetch_one(SQL_KEY_TASKS, (key.name, window_start("daily", now)))
            if row is not None and int(row["n"]) >= key.daily_tasks:
                continue
        return key.name
    raise NoKeyRoom(", ".join(key.name for key in keys) or "no key")


def _quota_reads(
    platform: str, requester_id: str, quota: JobQuota, now: float
) -> dict[str, tuple[str, Values]]:
    """The reads that tell whether the requester is at a limit of ``quota`` at ``now`` (sent
    together; :func:`_quota_refusal_of` reads their rows). The requester's active jobs are
    counted under their id and under :func:`~storage.queries.retention.erased_name`, which
    ``/forget-me`` renames their unfinished jobs to: deleting their data frees no place."""
    reads: dict[str, tuple[str, Values]] = {}
    if quota.max_active > 0:
        reads["active"] = (SQL_COUNT_ACTIVE, (platform, requester_id, *_ACTIVE))
        erased = erased_name(platform, requester_id)
        reads["erased"] = (SQL_COUNT_ACTIVE, (platform, erased, *_ACTIVE))
    if quota.max_daily_credits > 0:
        reads["spent"] = spent_statement(platform, requester_id, quota.refill, now)
    return reads


def _quota_refusal_of(
    found: Mapping[str, Sequence[Row]], quota: JobQuota, now: float, pending: int = 0
) -> QuotaRefusal | None:
    """The limit of ``quota`` the rows of :func:`_quota_reads` show the requester at,
    counting ``pending`` jobs as active, if any."""
    if quota.max_active > 0:
        rows = [*found["active"], *found["erased"]]
        active = sum(int(row["n"]) for row in rows) + pending
        if active >= quota.max_active:
            cancelled = sum(int(row["cancelled"] or 0) for row in rows)
            return QuotaRefusal("max_active", active, quota.max_active, cancelled=cancelled)
    if quota.max_daily_credits > 0:
        spent = spent_of(found["spent"], quota.refill, now)
        if spent.credits >= quota.max_daily_credits:
            allowed = quota.max_daily_credits
            return QuotaRefusal(
                "max_daily_credits", spent.credits, allowed, spent.refills_at(allowed)
            )
    return None


def check_new_job(new: NewJob) -> None:
    """Refuse an unknown family or status, or a malformed caller-chosen id."""
    check_word(new.family, JobFamily, "job family")
    check_word(new.status, JobStatus, "job status")
    if new.id is not None and not _JOB_ID_PATTERN.fullmatch(new.id):
        raise StorageError(f"a job id is 1–{JOB_ID_MAX} characters of A-Z a-z 0-9 - _")
