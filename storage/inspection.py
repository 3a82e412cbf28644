"""A read-only look at a genbot database for ``genbot doctor`` and ``genbot status``: the server,
the schema version, the processes that heartbeat into it with their lease counts, and the
unfinished jobs by state and owner. Nothing is migrated or written."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from storage.errors import StorageError
from storage.postgres.database import PostgresDatabase
from storage.records.jobs import UNFINISHED_STATUSES, ProcessStatus
from storage.sql.dialect import marks
from storage.sql.migrations import current_version
from storage.sql.schema import LATEST_VERSION
from storage.sql.session import Database, from_json
from storage.sqlite.database import SqliteDatabase

_UNFINISHED: Final = tuple(sorted(UNFINISHED_STATUSES))
SQL_SERVER: Final = "SELECT current_setting('server_version') AS server_version, {} AS server_now"
SQL_PROCESSES: Final = "SELECT id, host, pid, platforms, shards, started_at, seen_at FROM processes"
SQL_JOBS: Final = (
    f"SELECT status, owner, COUNT(*) AS n FROM jobs WHERE status IN ({marks(len(_UNFINISHED))})"
    " GROUP BY status, owner ORDER BY status, owner"
)


@dataclass(frozen=True)
class Inspection:
    """What a database says about the genbot cluster using it."""

    server: str
    where: str
    schema_version: int
    latest_version: int
    processes: list[ProcessStatus]
    jobs: list[tuple[str, str | None, int]]
    """Unfinished jobs: ``(status, owner, count)``."""
    now: float
    """When the processes were judged live or gone: the database server's wall clock where it
    has one (hosts whose clocks disagree with it see the cluster as it does), else this
    host's."""

    @property
    def live(self) -> list[ProcessStatus]:
        return [process for process in self.processes if process.live]


def _processes(
    rows: Sequence[Mapping[str, Any]], jobs: list[tuple[str, str | None, int]], live_since: float
) -> list[ProcessStatus]:
    leases: dict[str, int] = {}
    for _, owner, count in jobs:
        if owner is not None:
            leases[owner] = leases.get(owner, 0) + count
    found = [
        ProcessStatus(
            **{**row, "platforms": tuple(from_json(row["platforms"], []))},
            live=float(row["seen_at"]) >= live_since,
            leases=leases.get(row["id"], 0),
        )
        for row in rows
    ]
    return sorted(found, key=lambda p: (not p.live, p.id))


async def inspect_postgres(url: str, *, lease_seconds: float) -> Inspection:
    """Look at the PostgreSQL database at ``url`` (read-only), judging its processes on the
    server's clock, read in the first statement; :class:`StorageError` with one line when it
    cannot be reached."""
    db = PostgresDatabase(url, pool_size=1)
    try:
        row = await db.fetch_one(SQL_SERVER.format(db.dialect.server_time))
        assert row is not None
        server = f"PostgreSQL {row['server_version']}"
        return await inspect_database(db, server, lease_seconds, float(row["server_now"]))
    except StorageError as error:
        reason = str(error).removeprefix("database error: ")
        raise StorageError(f"cannot reach the database at {db.where}: {reason}") from error
    finally:
        await db.close()


async def inspect_sqlite(
    path: Path, *, lease_seconds: float, clock: Callable[[], float] = time.time
) -> Inspection:
    """Look at the SQLite database at ``path`` (read-only)."""
    server = f"SQLite {sqlite3.sqlite_version}"
    if not await asyncio.to_thread(path.exists):
        return Inspection(server, str(path), 0, LATEST_VERSION, [], [], clock())
    try:
        db = await SqliteDatabase.open(path, read_only=True)
        try:
            return await inspect_database(db, server, lease_seconds, clock())
        finally:
            await db.close()
    except StorageError as error:
        raise StorageError(f"cannot read the database at {path}: {error}") from error


async def inspect_database(
    db: Database, server: str, lease_seconds: float, now: float
) -> Inspection:
    """What ``db`` (open, called ``server`` in the answer) says about the cluster at ``now``,
    a process being live when seen within ``lease_seconds`` (the admin page reads a running
    store's database through this too)."""
    version, rows, jobs = 0, [], []
    if await db.fetch_one(db.dialect.table_exists, ("schema_version",)):
        version = await current_version(db)
    if await db.fetch_one(db.dialect.table_exists, ("processes",)):
        rows = await db.fetch_all(SQL_PROCESSES)
        found = await db.fetch_all(SQL_JOBS, _UNFINISHED)
        jobs = [(row["status"], row["owner"], int(row["n"])) for row in found]
    processes = _processes(rows, jobs, now - lease_seconds)
    return Inspection(server, db.where, version, LATEST_VERSION, processes, jobs, now)
