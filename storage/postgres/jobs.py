"""Jobs on PostgreSQL: reads, compare-and-set moves, quota-checked creation, message links."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from psycopg import sql
from psycopg.types.json import Jsonb

from storage.errors import StorageError
from storage.job_data import ResultChange
from storage.job_records import (
    ACTIVE_STATUSES,
    Job,
    JobMessage,
    JobMessageKind,
    JobQuota,
    JobStatus,
    Lease,
    NewJob,
    QuotaRefusal,
    new_job_id,
)
from storage.postgres.base import Connection, PostgresBase, Query
from storage.rows import job_from_row
from storage.rules import (
    DONE_AT_PROVIDER,
    JSON_FIELDS,
    check_job_fields,
    check_message_kind,
    check_new_job,
    check_transition,
    utc_day,
)

SQL_JOB_BY_ID: Final[Query] = "SELECT * FROM jobs WHERE id = %s"
SQL_JOB_BY_TASK: Final[Query] = "SELECT * FROM jobs WHERE provider_id = %s AND family = 'task'"
SQL_JOB_FOR_UPDATE: Final[Query] = "SELECT * FROM jobs WHERE id = %s FOR UPDATE"
SQL_SET_RESULT: Final[Query] = (
    "UPDATE jobs SET result = %s, updated_at = %s WHERE id = %s RETURNING *"
)
SQL_DERIVATIVE: Final[Query] = "SELECT * FROM jobs WHERE parent_job_id = %s AND action = %s"
SQL_INSERT_JOB: Final[Query] = (
    "INSERT INTO jobs (id, family, type, status, provider_id, parent_job_id, action,"
    " requester_id, platform, workspace_id, channel_id, thread_id, prompt, parameters,"
    " webhook_secret, created_at, updated_at, owner, lease_until, is_dm, command_key)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
    " %s) ON CONFLICT DO NOTHING RETURNING *"
)
SQL_COMMANDED: Final[Query] = "SELECT * FROM jobs WHERE command_key = %s"
SQL_LOCK_REQUESTER: Final[Query] = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
SQL_COUNT_ACTIVE: Final[Query] = (
    "SELECT COUNT(*) AS n FROM jobs WHERE platform = %s AND requester_id = %s AND status = ANY(%s)"
)
SQL_CREDITS_TODAY: Final[Query] = (
    "SELECT COALESCE(SUM(credits), 0) AS n FROM usage"
    " WHERE platform = %s AND user_id = %s AND day = %s"
)
SQL_LINK_MESSAGE: Final[Query] = (
    "INSERT INTO job_messages (platform, channel_id, message_id, job_id, kind)"
    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (platform, channel_id, message_id)"
    " DO UPDATE SET job_id = excluded.job_id, kind = excluded.kind"
)
SQL_JOB_FOR_MESSAGE: Final[Query] = (
    "SELECT j.* FROM job_messages AS m JOIN jobs AS j ON j.id = m.job_id"
    " WHERE m.platform = %s AND m.channel_id = %s AND m.message_id = %s"
)
_ACTIVE: Final = sorted(ACTIVE_STATUSES)


def _insert_values(
    new: NewJob, job_id: str, now: float, owner: str, lease_until: float
) -> tuple[Any, ...]:
    return (
        job_id,
        new.family,
        new.type,
        new.status,
        new.provider_id,
        new.parent_job_id,
        new.action,
        new.requester_id,
        new.platform,
        new.workspace_id,
        new.channel_id,
        new.thread_id,
        new.prompt,
        Jsonb(dict(new.parameters)),
        new.webhook_secret,
        now,
        now,
        owner,
        lease_until,
        new.is_dm,
        new.command_key,
    )


def _encoded(fields: dict[str, Any]) -> dict[str, Any]:
    check_job_fields(fields)
    return {name: Jsonb(value) if name in JSON_FIELDS else value for name, value in fields.items()}


def _assignments(changes: dict[str, Any]) -> sql.Composed:
    return sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(name)) for name in changes)


async def insert_links(conn: Connection, links: Iterable[JobMessage]) -> None:
    rows = [(m.platform, m.channel_id, m.message_id, m.job_id, m.kind) for m in links]
    if rows:
        async with conn.cursor() as cursor:
            await cursor.executemany(SQL_LINK_MESSAGE, rows)


async def _quota_refusal(
    conn: Connection,
    platform: str,
    requester_id: str,
    quota: JobQuota,
    now: float,
    pending: int = 0,
) -> QuotaRefusal | None:
    if quota.max_active > 0:
        cursor = await conn.execute(SQL_COUNT_ACTIVE, (platform, requester_id, _ACTIVE))
        row = await cursor.fetchone()
        active = (int(row["n"]) if row else 0) + pending
        if active >= quota.max_active:
            return QuotaRefusal("max_active", active, quota.max_active)
    if quota.max_daily_credits > 0:
        day = utc_day(now)
        cursor = await conn.execute(SQL_CREDITS_TODAY, (platform, requester_id, day))
        row = await cursor.fetchone()
        credits = int(row["n"]) if row else 0
        if credits >= quota.max_daily_credits:
            return QuotaRefusal("max_daily_credits", credits, quota.max_daily_credits)
    return None


def _made_by_the_lost_attempt(job: Job, store: PostgresBase) -> bool:
    """Whether a keyed job found by a repeated creation is the one the first attempt made
    before its connection was lost (this process's, still untouched): then it is this call's."""
    return (
        job.owner == store.process_id
        and job.status == "creating"
        and job.progress_message_id is None
        and job.lease_generation == 0
    )


class PostgresJobs(PostgresBase):
    """Job methods of :class:`storage.postgres.PostgresStore`."""

    async def get_job(self, job_id: str) -> Job | None:
        """The job with this id, or None."""
        row = await self._fetch_one(SQL_JOB_BY_ID, (job_id,))
        return None if row is None else job_from_row(row)

    async def job_for_task(self, task_id: str) -> Job | None:
        """The image task job the provider knows as ``task_id``, or None."""
        row = await self._fetch_one(SQL_JOB_BY_TASK, (task_id,))
        return None if row is None else job_from_row(row)

    async def create_job_within(
        self, new: NewJob, quota: JobQuota
    ) -> tuple[Job, bool] | QuotaRefusal:
        """Create ``new`` unless its requester is at a limit of ``quota``: the requester's
        transaction-scoped advisory lock serializes their creations (in every process), so
        counting, summing and inserting cannot interleave. A derivative whose pair exists, or a
        job of the same ``command_key``, is returned as ``(existing, False)`` without a quota
        check. A keyed creation runs once more on a fresh connection when the first was lost
        (repeating it finds the job the first may have made)."""
        check_new_job(new)
        derivative = new.parent_job_id is not None and new.action is not None

        attempts = 0

        async def work(conn: Connection) -> tuple[Job, bool] | QuotaRefusal:
            nonlocal attempts
            attempts += 1
            if new.command_key is not None:
                cursor = await conn.execute(SQL_COMMANDED, (new.command_key,))
                commanded = await cursor.fetchone()
                if commanded is not None:
                    found = job_from_row(commanded)
                    return found, attempts > 1 and _made_by_the_lost_attempt(found, self)
            if derivative:
                cursor = await conn.execute(SQL_DERIVATIVE, (new.parent_job_id, new.action))
                existing = await cursor.fetchone()
                if existing is not None:
                    return job_from_row(existing), False
            await conn.execute(SQL_LOCK_REQUESTER, (f"{new.platform}\x1f{new.requester_id}",))
            now = self._now()
            refusal = await _quota_refusal(conn, new.platform, new.requester_id, quota, now)
            if refusal is not None:
                return refusal
            if new.parent_job_id is not None:
                cursor = await conn.execute(SQL_JOB_BY_ID, (new.parent_job_id,))
                if await cursor.fetchone() is None:
                    raise StorageError(f"parent job {new.parent_job_id!r} does not exist")
            inserted = await self._insert(conn, new, now)
            if inserted is not None:
                return job_from_row(inserted), True
            if derivative:
                cursor = await conn.execute(SQL_DERIVATIVE, (new.parent_job_id, new.action))
                raced = await cursor.fetchone()
                if raced is not None:
                    return job_from_row(raced), False
            if new.command_key is not None:
                cursor = await conn.execute(SQL_COMMANDED, (new.command_key,))
                raced = await cursor.fetchone()
                if raced is not None:
                    return job_from_row(raced), False
            raise StorageError("the job conflicts with an existing one (same provider id?)")

        if new.command_key is None:
            async with self._transaction() as conn:
                return await work(conn)
        return await self._attempt(work, transaction=True)

    async def quota_refusal(
        self, platform: str, requester_id: str, quota: JobQuota, *, pending: int = 0
    ) -> QuotaRefusal | None:
        """The limit of ``quota`` the requester is at now (``pending`` counted as active
        jobs), or None; reads only."""

        async def work(conn: Connection) -> QuotaRefusal | None:
            return await _quota_refusal(conn, platform, requester_id, quota, self._now(), pending)

        return await self._attempt(work)

    async def _insert(self, conn: Connection, new: NewJob, now: float) -> dict[str, Any] | None:
        if new.id is not None:
            cursor = await conn.execute("SELECT 1 FROM jobs WHERE id = %s", (new.id,))
            if await cursor.fetchone() is not None:
                raise StorageError(f"job id {new.id!r} already exists")
        while True:
            job_id = new.id or new_job_id()
            lease = (self._process_id, now + self._lease_seconds)
            cursor = await conn.execute(SQL_INSERT_JOB, _insert_values(new, job_id, now, *lease))
            row = await cursor.fetchone()
            if row is not None or new.id is not None:
                return row
            cursor = await conn.execute("SELECT 1 FROM jobs WHERE id = %s", (job_id,))
            if await cursor.fetchone() is None:
                return None

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
        """Compare-and-set (see :meth:`storage.JobWriter.transition`): one ``UPDATE … WHERE
        status = ANY(…)``; a concurrent mover waits for the row lock, re-checks the status on
        the committed row and moves nothing."""
        sources = check_transition(from_statuses, to_status)
        changes = {"status": to_status, "updated_at": self._now(), **_encoded(fields)}
        stamp = to_status in DONE_AT_PROVIDER and "finished_at" not in changes
        statement = sql.SQL("UPDATE jobs SET {}{} WHERE id = %s AND status = ANY(%s){}").format(
            _assignments(changes),
            sql.SQL(", finished_at = COALESCE(finished_at, %s)") if stamp else sql.SQL(""),
            sql.SQL(" AND owner = %s AND lease_generation = %s") if fence else sql.SQL(""),
        )
        values = [*changes.values(), *([changes["updated_at"]] if stamp else []), job_id]
        held = (fence.owner, fence.generation) if fence else ()

        async def work(conn: Connection) -> bool:
            cursor = await conn.execute(statement, (*values, list(sources), *held))
            moved = cursor.rowcount == 1
            if moved and links:
                await insert_links(conn, links)
            return moved

        return await self._attempt(work, transaction=True)

    async def change_job_result(self, job_id: str, change: ResultChange) -> Job | None:
        """Replace the result with ``change(stored result)`` while holding the job's row lock
        (``SELECT … FOR UPDATE``), so changes from every process apply one after another."""
        async with self._transaction() as conn:
            cursor = await conn.execute(SQL_JOB_FOR_UPDATE, (job_id,))
            row = await cursor.fetchone()
            if row is None:
                return None
            job = job_from_row(row)
            changed = change(dict(job.result))
            if changed is None:
                return job
            cursor = await conn.execute(SQL_SET_RESULT, (Jsonb(changed), self._now(), job_id))
            updated = await cursor.fetchone()
        return None if updated is None else job_from_row(updated)

    async def update_job(self, job_id: str, **fields: Any) -> bool:
        """Set fields whatever the status; False if the job does not exist."""
        changes = {"updated_at": self._now(), **_encoded(fields)}
        statement = sql.SQL("UPDATE jobs SET {} WHERE id = %s").format(_assignments(changes))
        async with self._connection() as conn:
            cursor = await conn.execute(statement, (*changes.values(), job_id))
            return cursor.rowcount == 1

    async def link_message(
        self,
        platform: str,
        channel_id: str,
        message_id: str,
        job_id: str,
        kind: JobMessageKind = "result",
    ) -> None:
        """Map one platform message to a job (re-linking a message moves it)."""
        check_message_kind(kind)
        await self._execute(SQL_LINK_MESSAGE, (platform, channel_id, message_id, job_id, kind))

    async def job_for_message(self, platform: str, channel_id: str, message_id: str) -> Job | None:
        """The job a platform message belongs to (the button-press lookup), or None."""
        row = await self._fetch_one(SQL_JOB_FOR_MESSAGE, (platform, channel_id, message_id))
        return None if row is None else job_from_row(row)
