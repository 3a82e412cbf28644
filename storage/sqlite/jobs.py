"""Jobs on SQLite: reads, compare-and-set transitions, field updates, and the shared SQL."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from sqlite_utils import Database

from storage.errors import StorageError
from storage.job_data import ResultChange
from storage.job_records import Job, JobMessage, JobStatus, Lease, NewJob, new_job_id
from storage.rows import job_from_row, to_json
from storage.rules import (
    DONE_AT_PROVIDER,
    JSON_FIELDS,
    check_job_fields,
    check_transition,
)
from storage.sqlite.base import StoreBase
from storage.sqlite.sql import fetch_one, placeholders, write_transaction

SQL_JOB_BY_ID: Final = "SELECT * FROM jobs WHERE id = ?"
SQL_JOB_BY_TASK: Final = "SELECT * FROM jobs WHERE provider_id = ? AND family = 'task'"
SQL_DERIVATIVE: Final = "SELECT * FROM jobs WHERE parent_job_id = ? AND action = ?"
SQL_LINK_MESSAGE: Final = (
    "INSERT INTO job_messages (platform, channel_id, message_id, job_id, kind)"
    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform, channel_id, message_id)"
    " DO UPDATE SET job_id = excluded.job_id, kind = excluded.kind"
)
INSERT_COLUMNS: Final = (
    "id, family, type, status, provider_id, parent_job_id, action, requester_id, platform,"
    " workspace_id, channel_id, thread_id, prompt, parameters, webhook_secret, created_at,"
    " updated_at, owner, lease_until, is_dm, command_key"
)
SQL_INSERT_JOB: Final = f"INSERT INTO jobs ({INSERT_COLUMNS}) VALUES ({placeholders(21)})"
SQL_COMMANDED: Final = "SELECT * FROM jobs WHERE command_key = ?"


def insert_values(
    new: NewJob, job_id: str, now: float, owner: str, lease_until: float
) -> tuple[Any, ...]:
    """The values of ``SQL_INSERT_JOB`` for ``new``, leased to ``owner`` (the order of
    ``INSERT_COLUMNS``)."""
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
        to_json(dict(new.parameters)),
        new.webhook_secret,
        now,
        now,
        owner,
        lease_until,
        new.is_dm,
        new.command_key,
    )


def fresh_id(db: Database, new: NewJob) -> str:
    """``new.id`` when free (else raises), or a fresh unused id."""
    if new.id is not None:
        if db.conn.execute("SELECT 1 FROM jobs WHERE id = ?", (new.id,)).fetchone():
            raise StorageError(f"job id {new.id!r} already exists")
        return new.id
    while True:
        job_id = new_job_id()
        if not db.conn.execute("SELECT 1 FROM jobs WHERE id = ?", (job_id,)).fetchone():
            return job_id


def check_parent(db: Database, parent_job_id: str | None) -> None:
    if parent_job_id is not None and fetch_one(db, SQL_JOB_BY_ID, (parent_job_id,)) is None:
        raise StorageError(f"parent job {parent_job_id!r} does not exist")


def encoded_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """Checked job fields with JSON fields as text."""
    check_job_fields(fields)
    return {
        name: to_json(value) if name in JSON_FIELDS else value for name, value in fields.items()
    }


def insert_job_links(db: Database, links: Iterable[JobMessage]) -> int:
    cursor = db.conn.executemany(
        SQL_LINK_MESSAGE,
        [(m.platform, m.channel_id, m.message_id, m.job_id, m.kind) for m in links],
    )
    return cursor.rowcount


class SqliteJobs(StoreBase):
    """Job methods of :class:`storage.sqlite.SqliteStore`."""

    async def get_job(self, job_id: str) -> Job | None:
        """The job with this id, or None."""
        row = await self._call(lambda db: fetch_one(db, SQL_JOB_BY_ID, (job_id,)))
        return None if row is None else job_from_row(row)

    async def job_for_task(self, task_id: str) -> Job | None:
        """The image task job the provider knows as ``task_id``, or None."""
        row = await self._call(lambda db: fetch_one(db, SQL_JOB_BY_TASK, (task_id,)))
        return None if row is None else job_from_row(row)

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
        """Compare-and-set: move the job to ``to_status`` (and set ``fields``) only if its
        status is one of ``from_statuses``; True if this call made the move. One UPDATE …
        WHERE status IN (…), so among concurrent callers exactly one wins: the exactly-once
        guard for posting results. ``links`` (message → job rows) are committed in the same
        transaction, only when the move happened. Entering ``finished``, ``failed`` or
        ``create_failed`` stamps ``finished_at`` unless it is given or already set.
        Raises :class:`StorageError` for a move ``JOB_TRANSITIONS`` does not allow."""
        sources = check_transition(from_statuses, to_status)
        changes = encoded_fields(fields)

        def work(db: Database) -> bool:
            now = self._now()
            assignments = ["status = ?", "updated_at = ?"]
            values: list[Any] = [to_status, now]
            for name, value in changes.items():
                assignments.append(f"{name} = ?")
                values.append(value)
            if to_status in DONE_AT_PROVIDER and "finished_at" not in changes:
                assignments.append("finished_at = COALESCE(finished_at, ?)")
                values.append(now)
            sql = (
                f"UPDATE jobs SET {', '.join(assignments)}"
                f" WHERE id = ? AND status IN ({placeholders(len(sources))})"
            )
            held: tuple[Any, ...] = ()
            if fence is not None:
                sql += " AND owner = ? AND lease_generation = ?"
                held = (fence.owner, fence.generation)
            with write_transaction(db):
                moved = db.conn.execute(sql, (*values, job_id, *sources, *held)).rowcount == 1
                if moved and links:
                    insert_job_links(db, links)
            return moved

        return await self._call(work)

    async def change_job_result(self, job_id: str, change: ResultChange) -> Job | None:
        """Replace the result with ``change(stored result)`` in one write transaction."""

        def work(db: Database) -> Job | None:
            with write_transaction(db):
                row = fetch_one(db, SQL_JOB_BY_ID, (job_id,))
                if row is None:
                    return None
                job = job_from_row(row)
                changed = change(dict(job.result))
                if changed is None:
                    return job
                db.conn.execute(
                    "UPDATE jobs SET result = ?, updated_at = ? WHERE id = ?",
                    (to_json(changed), self._now(), job_id),
                )
                updated = fetch_one(db, SQL_JOB_BY_ID, (job_id,))
            return None if updated is None else job_from_row(updated)

        return await self._call(work)

    async def update_job(self, job_id: str, **fields: Any) -> bool:
        """Set fields (see ``UPDATABLE_FIELDS``; JSON fields take Python values) whatever the
        status; False if the job does not exist. Status changes go through
        :meth:`transition`."""
        changes = encoded_fields(fields)

        def work(db: Database) -> bool:
            assignments = ", ".join(["updated_at = ?", *(f"{name} = ?" for name in changes)])
            with write_transaction(db):
                cursor = db.conn.execute(
                    f"UPDATE jobs SET {assignments} WHERE id = ?",
                    (self._now(), *changes.values(), job_id),
                )
            return cursor.rowcount == 1

        return await self._call(work)
