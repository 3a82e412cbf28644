"""The job ports: reading one, compare-and-set moves, field and result changes, finding a job
by its provider id, and the platform message → job links behind every button."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from storage.errors import StorageError, check_word
from storage.queries.base import Clock
from storage.queries.grouped import Grouped
from storage.records.jobs import (
    ALL_STATUSES,
    JOB_TRANSITIONS,
    Job,
    JobMessage,
    JobMessageKind,
    JobMove,
    JobStatus,
    Lease,
    ResultChange,
)
from storage.sql.dialect import Dialect, marks
from storage.sql.session import Database, Row, Session, from_json, record, to_json

JSON_FIELDS: Final[dict[str, Any]] = {
    "parameters": {},
    "result_urls": [],
    "actions": [],
    "result": {},
}
"""The JSON fields, each with its value for NULL."""
UPDATABLE_FIELDS: Final[frozenset[str]] = frozenset(JSON_FIELDS) | {
    "type", "provider_id", "thread_id", "progress_message_id", "result_message_id", "prompt",
    "error", "webhook_secret", "credits", "finished_at", "last_polled_at", "last_webhook_at",
    "next_poll_at", "delivery_attempts", "post_claims", "provider_key",
}  # fmt: skip
"""Fields ``update_job`` and ``transition`` accept as keywords."""
LinkedMove = tuple[str, list[Any], Sequence[JobMessage]]
"""A compare-and-set move's statement (``RETURNING`` what its caller reads back) and values,
and the links committed with it."""
DONE_AT_PROVIDER: Final[frozenset[str]] = frozenset(("finished", "failed", "create_failed"))
"""Entering one of these stamps ``finished_at`` (unless given or already set)."""
SQL_JOB_BY_ID: Final = "SELECT * FROM jobs WHERE id = ?"
SQL_JOB_BY_TASK: Final = "SELECT * FROM jobs WHERE provider_id = ? AND family = 'task'"
SQL_LEASES_AND_STATUSES: Final = (
    "SELECT id, owner, lease_generation, status FROM jobs WHERE id IN ({})"
)
SQL_SET_RESULT: Final = "UPDATE jobs SET result = ?, updated_at = ? WHERE id = ? RETURNING *"
SQL_LINK_MESSAGE: Final = (
    "INSERT INTO job_messages (platform, channel_id, message_id, job_id, kind)"
    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform, channel_id, message_id)"
    " DO UPDATE SET job_id = excluded.job_id, kind = excluded.kind"
)
SQL_JOB_FOR_MESSAGE: Final = (
    "SELECT j.* FROM job_messages AS m JOIN jobs AS j ON j.id = m.job_id"
    " WHERE m.platform = ? AND m.channel_id = ? AND m.message_id = ?"
)


def job_from_row(row: Row) -> Job:
    decoded = {name: from_json(row[name], default) for name, default in JSON_FIELDS.items()}
    return record(Job, row, **decoded, is_dm=bool(row["is_dm"]))


def encoded_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """Checked job fields, JSON fields as text."""
    check_job_fields(fields)
    return {name: to_json(v) if name in JSON_FIELDS else v for name, v in fields.items()}


@dataclass
class JobReader:
    """Reading one job, by its id or by the provider's id for it."""

    db: Database

    async def get_job(self, job_id: str) -> Job | None:
        """The job with this id, or None."""
        row = await self.db.fetch_one(SQL_JOB_BY_ID, (job_id,))
        return None if row is None else job_from_row(row)

    async def job_for_task(self, task_id: str) -> Job | None:
        """The image task job (family ``task``) the provider knows as ``task_id``, or None."""
        row = await self.db.fetch_one(SQL_JOB_BY_TASK, (task_id,))
        return None if row is None else job_from_row(row)

    async def lease_and_status(self, job_id: str) -> tuple[Lease | None, JobStatus] | None:
        """The lease the job is held under (None: nobody holds it) and its status, or None for
        an unknown job: what a write fenced by a lease checks. Asked while one is under way,
        they are read together in one statement (:class:`~storage.queries.grouped.Grouped`)."""
        return await self._leases_and_statuses(job_id)

    @functools.cached_property
    def _leases_and_statuses(self) -> Grouped[str, tuple[Lease | None, JobStatus] | None]:
        return Grouped(self._read_leases_and_statuses)

    async def _read_leases_and_statuses(
        self, job_ids: Sequence[str]
    ) -> list[tuple[Lease | None, JobStatus] | None]:
        unique = list(dict.fromkeys(job_ids))
        rows = await self.db.fetch_all(SQL_LEASES_AND_STATUSES.format(marks(len(unique))), unique)
        found: dict[str, tuple[Lease | None, JobStatus]] = {
            row["id"]: (
                None if row["owner"] is None else Lease(row["owner"], row["lease_generation"]),
                row["status"],
            )
            for row in rows
        }
        return [found.get(job_id) for job_id in job_ids]


@dataclass
class JobWriter(JobReader):
    """Changing jobs: compare-and-set status moves and field updates."""

    clock: Clock

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
        process) exactly one wins: one ``UPDATE … WHERE status IN (…)``, a concurrent mover
        waits for the row, re-checks the status on the committed row and moves nothing (the
        exactly-once guard for posting results). ``links`` are committed with the move, only
        when it happened (the linked moves a process asks for while one is under way go
        together in one transaction, :class:`~storage.queries.grouped.Grouped`). With
        ``fence``, only while that lease is still the job's (its owner and generation): the
        owner's own steps use it, so a process that lost the job (taken over while it stalled)
        changes nothing. Entering ``finished``, ``failed`` or
        ``create_failed`` stamps ``finished_at`` unless given or already set. A move
        ``JOB_TRANSITIONS`` does not allow raises :class:`StorageError`."""
        move = JobMove(job_id, from_statuses, to_status, fields, fence)
        if links:
            return await self._move_reading(move, "id", links) is not None
        sql, values = compare_and_set(move, self.clock(), self.db.dialect)
        return await self.db.execute(sql, values, repeatable=True) == 1

    async def transition_noting(
        self,
        job_id: str,
        from_statuses: JobStatus | Iterable[JobStatus],
        to_status: JobStatus,
        *,
        noted: Mapping[str, Any] | None = None,
        links: Sequence[JobMessage] = (),
        fence: Lease | None = None,
        **fields: Any,
    ) -> dict[str, Any] | None:
        """:meth:`transition`, answering the job's result as the move left it (read by the
        move's own statement, ``RETURNING result``: the job's other columns are not read), or
        None when it did not move. ``noted``: keys the move sets in the job's stored result,
        every other key as the row holds it when the move is made (not ``result`` as the caller
        read it), so a change of the result made since (a button marked pressed by a concurrent
        press, in any process) stays and shows in the answer. Their values must not be objects
        or null (:meth:`Dialect.json_merged`)."""
        move = JobMove(job_id, from_statuses, to_status, fields, fence)
        row = await self._move_reading(move, "result", links, noted)
        return None if row is None else from_json(row["result"], {})

    async def transition_answering(
        self,
        job_id: str,
        from_statuses: JobStatus | Iterable[JobStatus],
        to_status: JobStatus,
        *,
        links: Sequence[JobMessage] = (),
        fence: Lease | None = None,
        **fields: Any,
    ) -> Job | None:
        """:meth:`transition`, answering the job as the move left it (the move's own
        statement reads the whole row back, ``RETURNING *``), or None when it did not move:
        for a caller that goes on with the job (a new job's start, once its progress message
        is linked and once the provider's answer is recorded) instead of reading it again."""
        move = JobMove(job_id, from_statuses, to_status, fields, fence)
        row = await self._move_reading(move, "*", links)
        return None if row is None else job_from_row(row)

    async def _move_reading(
        self,
        move: JobMove,
        read: str,
        links: Sequence[JobMessage],
        noted: Mapping[str, Any] | None = None,
    ) -> Row | None:
        """Make ``move`` (``noted``: see :meth:`transition_noting`), answering the columns
        ``read`` as its own statement left them (``RETURNING``), or None when it did not move;
        ``links`` are committed with it, grouped with the other linked moves."""
        sql, values = compare_and_set(move, self.clock(), self.db.dialect, noted)
        sql += f" RETURNING {read}"
        if links:
            return await self._linked_moves((sql, values, links))
        return await self.db.fetch_one(sql, values, repeatable=True)

    @functools.cached_property
    def _linked_moves(self) -> Grouped[LinkedMove, Row | None]:
        return Grouped(self._move_together)

    async def _move_together(self, batch: Sequence[LinkedMove]) -> list[Row | None]:
        """One transaction for ``batch``: the moves (sent together), then the links of those
        that moved. Each move's answer: the row its ``RETURNING`` read (what its caller asked
        back), or None when it did not move."""

        async def work(tx: Session) -> list[Row | None]:
            answers = await tx.fetch_each([(sql, values) for sql, values, _ in batch])
            moved = [rows[0] if rows else None for rows in answers]
            rows = [
                (link.platform, link.channel_id, link.message_id, link.job_id, link.kind)
                for (_, _, links), row in zip(batch, moved, strict=True)
                if row is not None
                for link in links
            ]
            if rows:
                await tx.execute_many(SQL_LINK_MESSAGE, rows)
            return moved

        return await self.db.transaction(work, repeatable=True)

    async def transition_many(self, moves: Sequence[JobMove]) -> list[bool]:
        """:meth:`transition` for each of ``moves`` (without links), sent to the database
        together: moves alike (the same statuses and field names, so the same statement) go as
        one batch (:meth:`Session.execute_each`: one round trip on PostgreSQL). Each is its own
        compare-and-set; whether each moved, in order."""
        now, dialect = self.clock(), self.db.dialect
        statements = [compare_and_set(move, now, dialect) for move in moves]
        return await moved_alike(self.db, statements)

    async def update_job(self, job_id: str, **fields: Any) -> bool:
        """Set fields (see ``UPDATABLE_FIELDS``; JSON fields take Python values)
        whatever the status; False if the job does not exist. Status changes go through
        :meth:`transition`."""
        changes = {"updated_at": self.clock(), **encoded_fields(fields)}
        assignments = ", ".join(f"{name} = ?" for name in changes)
        update = f"UPDATE jobs SET {assignments} WHERE id = ?"
        return await self.db.execute(update, (*changes.values(), job_id)) == 1

    async def change_job_result(self, job_id: str, change: ResultChange) -> Job | None:
        """Replace the job's result with ``change(stored result)`` in one step: the job's row
        is held from the read to the write (a write transaction; on PostgreSQL ``SELECT … FOR
        UPDATE``), so no other change of that job (in any process) comes between them and
        concurrent changes of different keys all stay. ``change`` returning None writes
        nothing. The job afterwards; None if it does not exist."""

        async def work(tx: Session) -> Job | None:
            row = await tx.fetch_one(SQL_JOB_BY_ID + tx.dialect.for_update, (job_id,))
            if row is None:
                return None
            job = job_from_row(row)
            changed = change(dict(job.result))
            if changed is None:
                return job
            updated = await tx.fetch_one(SQL_SET_RESULT, (to_json(changed), self.clock(), job_id))
            return None if updated is None else job_from_row(updated)

        return await self.db.transaction(work)


@dataclass
class MessageLinks:
    """The platform message → job map behind every button."""

    db: Database

    async def link_message(
        self,
        platform: str,
        channel_id: str,
        message_id: str,
        job_id: str,
        kind: JobMessageKind = "result",
    ) -> None:
        """Map one platform message to a job (``kind``: progress, result or other;
        re-linking a message moves it)."""
        check_word(kind, JobMessageKind, "job message kind")
        link = (platform, channel_id, message_id, job_id, kind)
        await self.db.execute(SQL_LINK_MESSAGE, link, repeatable=True)

    async def job_for_message(self, platform: str, channel_id: str, message_id: str) -> Job | None:
        """The job a platform message belongs to (the button-press lookup), or None."""
        row = await self.db.fetch_one(SQL_JOB_FOR_MESSAGE, (platform, channel_id, message_id))
        return None if row is None else job_from_row(row)


async def moved_alike(
    runner: Database | Session, statements: Sequence[tuple[str, list[Any]]]
) -> list[bool]:
    """Run compare-and-set ``statements``, alike ones (the same SQL) as one batch
    (:meth:`Session.execute_each`); whether each changed its row, in order."""
    alike: dict[str, list[tuple[int, list[Any]]]] = {}
    for index, (sql, values) in enumerate(statements):
        alike.setdefault(sql, []).append((index, values))
    moved = [False] * len(statements)
    for sql, group in alike.items():
        counts = await runner.execute_each(sql, [values for _, values in group])
        for (index, _), count in zip(group, counts, strict=True):
            moved[index] = count == 1
    return moved


def compare_and_set(
    move: JobMove, now: float, dialect: Dialect, noted: Mapping[str, Any] | None = None
) -> tuple[str, list[Any]]:
    """The compare-and-set ``UPDATE`` of ``move`` and its values; ``noted``: keys it sets in
    the stored result (see :meth:`JobWriter.transition_noting`)."""
    sources = check_transition(move.from_statuses, move.to_status)
    changes = {"status": move.to_status, "updated_at": now, **encoded_fields(move.fields)}
    assignments = [f"{name} = ?" for name in changes]
    values = [*changes.values()]
    if noted:
        check_noted(noted, move.fields)
        assignments.append(f"result = {dialect.json_merged('result')}")
        values.append(to_json(dict(noted)))
    if move.to_status in DONE_AT_PROVIDER and "finished_at" not in changes:
        assignments.append("finished_at = COALESCE(finished_at, ?)")
        values.append(now)
    sql = (
        f"UPDATE jobs SET {', '.join(assignments)}"
        f" WHERE id = ? AND status IN ({marks(len(sources))})"
    )
    values += [move.job_id, *sources]
    if move.fence is not None:
        sql += " AND owner = ? AND lease_generation = ?"
        values += [move.fence.owner, move.fence.generation]
    return sql, values


def check_noted(noted: Mapping[str, Any], fields: Mapping[str, Any]) -> None:
    """Refuse result keys a move cannot set alike on both backends (objects, null), or beside
    the whole result."""
    if "result" in fields:
        raise StorageError("a move sets the whole result or notes keys in it, not both")
    whole = [key for key, value in noted.items() if value is None or isinstance(value, Mapping)]
    if whole:
        raise StorageError(f"result keys noted by a move cannot be objects or null: {whole}")


def status_tuple(statuses: JobStatus | Iterable[JobStatus]) -> tuple[JobStatus, ...]:
    """One status or several, validated, sorted and without repeats."""
    chosen: tuple[JobStatus, ...] = (
        (statuses,) if isinstance(statuses, str) else tuple(sorted(set(statuses)))
    )
    if not chosen:
        raise StorageError("at least one status is needed")
    unknown = [status for status in chosen if status not in ALL_STATUSES]
    if unknown:
        raise StorageError(f"unknown job status {unknown[0]!r}")
    return chosen


def check_transition(
    from_statuses: JobStatus | Iterable[JobStatus], to_status: JobStatus
) -> tuple[JobStatus, ...]:
    """The validated source statuses of a move ``JOB_TRANSITIONS`` allows; else raises."""
    sources = status_tuple(from_statuses)
    if to_status not in ALL_STATUSES:
        raise StorageError(f"unknown job status {to_status!r}")
    illegal = [s for s in sources if s != to_status and to_status not in JOB_TRANSITIONS[s]]
    if illegal:
        raise StorageError(f"job status cannot go from {illegal[0]!r} to {to_status!r}")
    return sources


def check_job_fields(fields: Mapping[str, Any]) -> None:
    """Refuse field names ``update_job`` / ``transition`` do not accept."""
    unknown = set(fields) - UPDATABLE_FIELDS
    if unknown:
        raise StorageError(f"not updatable job fields: {', '.join(sorted(unknown))}")
