"""Image and diffusion jobs: creation, idempotent derivatives, compare-and-set transitions."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

from sqlite_utils import Database

from storage.base import StoreBase
from storage.errors import StorageError
from storage.records import (
    ALL_STATUSES,
    JOB_ID_MAX,
    JOB_TRANSITIONS,
    Job,
    JobMessage,
    JobStatus,
    NewJob,
    new_job_id,
)
from storage.sql import (
    Row,
    fetch_one,
    from_json,
    placeholders,
    to_json,
    write_transaction,
)

FAMILIES: Final[frozenset[str]] = frozenset(("task", "diffusion"))
JSON_FIELDS: Final[frozenset[str]] = frozenset(("parameters", "result_urls", "actions", "result"))
UPDATABLE_FIELDS: Final[frozenset[str]] = JSON_FIELDS | {
    "type",
    "provider_id",
    "thread_id",
    "progress_message_id",
    "result_message_id",
    "prompt",
    "error",
    "webhook_secret",
    "credits",
    "finished_at",
    "last_polled_at",
    "last_webhook_at",
    "next_poll_at",
    "delivery_attempts",
    "post_claims",
}
"""Fields :meth:`JobStore.update_job` and :meth:`JobStore.transition` accept as keywords."""
_DONE_AT_PROVIDER: Final[frozenset[str]] = frozenset(("finished", "failed", "create_failed"))
_JOB_ID_PATTERN: Final = re.compile(rf"[A-Za-z0-9_-]{{1,{JOB_ID_MAX}}}")

SQL_JOB_BY_ID: Final = "SELECT * FROM jobs WHERE id = ?"
SQL_JOB_BY_PROVIDER: Final = "SELECT * FROM jobs WHERE provider_id = ? ORDER BY family"
SQL_JOB_BY_PROVIDER_FAMILY: Final = "SELECT * FROM jobs WHERE provider_id = ? AND family = ?"
SQL_DERIVATIVE: Final = "SELECT * FROM jobs WHERE parent_job_id = ? AND action = ?"
SQL_LINK_MESSAGE: Final = (
    "INSERT INTO job_messages (platform, channel_id, message_id, job_id, kind)"
    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform, channel_id, message_id)"
    " DO UPDATE SET job_id = excluded.job_id, kind = excluded.kind"
)
_INSERT_COLUMNS: Final = (
    "id, family, type, status, provider_id, parent_job_id, action, requester_id, platform,"
    " workspace_id, channel_id, thread_id, prompt, parameters, webhook_secret, created_at,"
    " updated_at"
)
SQL_INSERT_JOB: Final = f"INSERT INTO jobs ({_INSERT_COLUMNS}) VALUES ({placeholders(17)})"


def job_from_row(row: Row) -> Job:
    return Job(
        id=row["id"],
        family=row["family"],
        type=row["type"],
        status=row["status"],
        provider_id=row["provider_id"],
        parent_job_id=row["parent_job_id"],
        action=row["action"],
        requester_id=row["requester_id"],
        platform=row["platform"],
        workspace_id=row["workspace_id"],
        channel_id=row["channel_id"],
        thread_id=row["thread_id"],
        progress_message_id=row["progress_message_id"],
        result_message_id=row["result_message_id"],
        prompt=row["prompt"],
        parameters=from_json(row["parameters"], {}),
        result_urls=from_json(row["result_urls"], []),
        actions=from_json(row["actions"], []),
        result=from_json(row["result"], {}),
        error=row["error"],
        webhook_secret=row["webhook_secret"],
        credits=row["credits"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        finished_at=row["finished_at"],
        last_polled_at=row["last_polled_at"],
        last_webhook_at=row["last_webhook_at"],
        next_poll_at=row["next_poll_at"],
        delivery_attempts=row["delivery_attempts"],
        post_claims=row["post_claims"],
    )


def check_new_job(new: NewJob) -> None:
    if new.family not in FAMILIES:
        raise StorageError(f"unknown job family {new.family!r}")
    if new.status not in ALL_STATUSES:
        raise StorageError(f"unknown job status {new.status!r}")
    if new.id is not None and not _JOB_ID_PATTERN.fullmatch(new.id):
        raise StorageError(f"a job id is 1–{JOB_ID_MAX} characters of A-Z a-z 0-9 - _")


def insert_values(new: NewJob, job_id: str, now: float) -> tuple[Any, ...]:
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
    )


def _fresh_id(db: Database, new: NewJob) -> str:
    if new.id is not None:
        if db.conn.execute("SELECT 1 FROM jobs WHERE id = ?", (new.id,)).fetchone():
            raise StorageError(f"job id {new.id!r} already exists")
        return new.id
    while True:
        job_id = new_job_id()
        if not db.conn.execute("SELECT 1 FROM jobs WHERE id = ?", (job_id,)).fetchone():
            return job_id


def _check_parent(db: Database, parent_job_id: str | None) -> None:
    if parent_job_id is not None and fetch_one(db, SQL_JOB_BY_ID, (parent_job_id,)) is None:
        raise StorageError(f"parent job {parent_job_id!r} does not exist")


def _encoded_fields(fields: dict[str, Any]) -> dict[str, Any]:
    unknown = set(fields) - UPDATABLE_FIELDS
    if unknown:
        raise StorageError(f"not updatable job fields: {', '.join(sorted(unknown))}")
    return {
        name: to_json(value) if name in JSON_FIELDS else value for name, value in fields.items()
    }


def status_tuple(statuses: JobStatus | Iterable[JobStatus]) -> tuple[JobStatus, ...]:
    chosen: tuple[JobStatus, ...] = (
        (statuses,) if isinstance(statuses, str) else tuple(sorted(set(statuses)))
    )
    if not chosen:
        raise StorageError("at least one status is needed")
    unknown = [status for status in chosen if status not in ALL_STATUSES]
    if unknown:
        raise StorageError(f"unknown job status {unknown[0]!r}")
    return chosen


def insert_job_links(db: Database, links: Iterable[JobMessage]) -> int:
    cursor = db.conn.executemany(
        SQL_LINK_MESSAGE,
        [(m.platform, m.channel_id, m.message_id, m.job_id, m.kind) for m in links],
    )
    return cursor.rowcount


class JobStore(StoreBase):
    """Job methods of :class:`storage.Store`."""

    async def create_job(self, new: NewJob) -> Job:
        """Insert a job (committed when this returns: create the row *before* calling the
        provider or posting anything). A fresh id is generated unless ``new.id`` is given.
        A job with ``parent_job_id`` and ``action`` should go through
        :meth:`create_or_get_derivative` instead (a duplicate pair raises here)."""
        check_new_job(new)

        def work(db: Database) -> Job:
            with write_transaction(db):
                _check_parent(db, new.parent_job_id)
                job_id = _fresh_id(db, new)
                db.conn.execute(SQL_INSERT_JOB, insert_values(new, job_id, self._now()))
                row = fetch_one(db, SQL_JOB_BY_ID, (job_id,))
            assert row is not None
            return job_from_row(row)

        return await self._call(work)

    async def create_or_get_derivative(self, new: NewJob) -> tuple[Job, bool]:
        """Create the job ``new.action`` derived from ``new.parent_job_id``, or return the one
        that already exists for that pair: ``(job, created)``. The pair is unique in the
        database, so the same button pressed twice (even concurrently, even from two
        processes) yields one job."""
        check_new_job(new)
        if new.parent_job_id is None or new.action is None:
            raise StorageError("a derivative job needs parent_job_id and action")
        pair = (new.parent_job_id, new.action)

        def work(db: Database) -> tuple[Job, bool]:
            with write_transaction(db):
                existing = fetch_one(db, SQL_DERIVATIVE, pair)
                if existing is not None:
                    return job_from_row(existing), False
                _check_parent(db, new.parent_job_id)
                job_id = _fresh_id(db, new)
                db.conn.execute(
                    SQL_INSERT_JOB + " ON CONFLICT (parent_job_id, action) DO NOTHING",
                    insert_values(new, job_id, self._now()),
                )
                row = fetch_one(db, SQL_DERIVATIVE, pair)
            assert row is not None
            return job_from_row(row), row["id"] == job_id

        return await self._call(work)

    async def get_job(self, job_id: str) -> Job | None:
        """The job with this id, or None."""
        row = await self._call(lambda db: fetch_one(db, SQL_JOB_BY_ID, (job_id,)))
        return None if row is None else job_from_row(row)

    async def get_job_by_provider_id(
        self, provider_id: str, family: str | None = None
    ) -> Job | None:
        """The job the provider knows as ``provider_id`` (a task id, or a diffusion id as
        text), or None. Give ``family`` when ids of both families could collide."""

        def work(db: Database) -> Row | None:
            if family is None:
                return fetch_one(db, SQL_JOB_BY_PROVIDER, (provider_id,))
            return fetch_one(db, SQL_JOB_BY_PROVIDER_FAMILY, (provider_id, family))

        row = await self._call(work)
        return None if row is None else job_from_row(row)

    async def transition(
        self,
        job_id: str,
        from_statuses: JobStatus | Iterable[JobStatus],
        to_status: JobStatus,
        *,
        links: Sequence[JobMessage] = (),
        **fields: Any,
    ) -> bool:
        """Compare-and-set: move the job to ``to_status`` (and set ``fields``) only if its
        status is one of ``from_statuses``; True if this call made the move. One UPDATE …
        WHERE status IN (…), so among concurrent callers exactly one wins: the exactly-once
        guard for posting results. ``links`` (message → job rows) are committed in the same
        transaction, only when the move happened. Entering ``finished``, ``failed`` or
        ``create_failed`` stamps ``finished_at`` unless it is given or already set.
        Raises :class:`StorageError` for a move ``JOB_TRANSITIONS`` does not allow."""
        sources = status_tuple(from_statuses)
        if to_status not in ALL_STATUSES:
            raise StorageError(f"unknown job status {to_status!r}")
        illegal = [s for s in sources if s != to_status and to_status not in JOB_TRANSITIONS[s]]
        if illegal:
            raise StorageError(f"job status cannot go from {illegal[0]!r} to {to_status!r}")
        changes = _encoded_fields(fields)

        def work(db: Database) -> bool:
            now = self._now()
            assignments = ["status = ?", "updated_at = ?"]
            values: list[Any] = [to_status, now]
            for name, value in changes.items():
                assignments.append(f"{name} = ?")
                values.append(value)
            if to_status in _DONE_AT_PROVIDER and "finished_at" not in changes:
                assignments.append("finished_at = COALESCE(finished_at, ?)")
                values.append(now)
            sql = (
                f"UPDATE jobs SET {', '.join(assignments)}"
                f" WHERE id = ? AND status IN ({placeholders(len(sources))})"
            )
            with write_transaction(db):
                moved = db.conn.execute(sql, (*values, job_id, *sources)).rowcount == 1
                if moved and links:
                    insert_job_links(db, links)
            return moved

        return await self._call(work)

    async def update_job(self, job_id: str, **fields: Any) -> bool:
        """Set fields (see ``UPDATABLE_FIELDS``; JSON fields take Python values) whatever the
        status; False if the job does not exist. Status changes go through
        :meth:`transition`."""
        changes = _encoded_fields(fields)

        def work(db: Database) -> bool:
            assignments = ", ".join(["updated_at = ?", *(f"{name} = ?" for name in changes)])
            with write_transaction(db):
                cursor = db.conn.execute(
                    f"UPDATE jobs SET {assignments} WHERE id = ?",
                    (self._now(), *changes.values(), job_id),
                )
            return cursor.rowcount == 1

        return await self._call(work)
