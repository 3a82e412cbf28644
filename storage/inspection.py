"""A read-only look at a genbot database for ``genbot doctor`` and ``genbot status``: the server,
the schema version, the processes that heartbeat into it with their lease counts, and the
unfinished jobs by state and owner. Nothing is migrated or written."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from storage.errors import StorageError
from storage.job_records import UNFINISHED_STATUSES
from storage.postgres.schema import LATEST_VERSION as POSTGRES_LATEST
from storage.postgres.urls import describe_url
from storage.records import ProcessStatus
from storage.sqlite.schema import LATEST_VERSION as SQLITE_LATEST

SQL_PROCESSES = "SELECT id, host, pid, platforms, shards, started_at, seen_at FROM processes"
SQL_JOBS = (
    "SELECT status, owner, COUNT(*) AS n FROM jobs WHERE status IN ({})"
    " GROUP BY status, owner ORDER BY status, owner"
)
SQL_JOBS_POSTGRES = (
    "SELECT status, owner, COUNT(*) AS n FROM jobs WHERE status = ANY(%s)"
    " GROUP BY status, owner ORDER BY status, owner"
)
SQL_VERSION = "SELECT COALESCE(MAX(version), 0) AS v FROM schema_version"
CONNECT_TIMEOUT = 10


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

    @property
    def live(self) -> list[ProcessStatus]:
        return [process for process in self.processes if process.live]


def _processes(
    rows: Sequence[Mapping[str, Any]],
    jobs: list[tuple[str, str | None, int]],
    now: float,
    lease_seconds: float,
) -> list[ProcessStatus]:
    leases: dict[str, int] = {}
    for _, owner, count in jobs:
        if owner is not None:
            leases[owner] = leases.get(owner, 0) + count
    found = []
    for row in rows:
        platforms = row["platforms"]
        if isinstance(platforms, str):
            platforms = json.loads(platforms)
        found.append(
            ProcessStatus(
                id=row["id"],
                host=row["host"],
                pid=int(row["pid"]),
                platforms=tuple(platforms),
                shards=row["shards"],
                started_at=float(row["started_at"]),
                seen_at=float(row["seen_at"]),
                live=now - float(row["seen_at"]) <= lease_seconds,
                leases=leases.get(row["id"], 0),
            )
        )
    return sorted(found, key=lambda p: (not p.live, p.id))


async def inspect_postgres(
    url: str, *, lease_seconds: float, clock: Callable[[], float] = time.time
) -> Inspection:
    """Look at the PostgreSQL database at ``url`` (read-only); :class:`StorageError` with
    one line when it cannot be reached."""
    where = describe_url(url)
    try:
        async with await psycopg.AsyncConnection.connect(
            url, autocommit=True, row_factory=dict_row, connect_timeout=CONNECT_TIMEOUT
        ) as conn:
            cursor = await conn.execute("SHOW server_version")
            version_row = await cursor.fetchone()
            server = f"PostgreSQL {version_row['server_version'] if version_row else '?'}"
            cursor = await conn.execute(
                "SELECT to_regclass('schema_version') IS NOT NULL AS versioned,"
                " to_regclass('processes') IS NOT NULL AS leased"
            )
            tables = await cursor.fetchone()
            assert tables is not None
            version, rows, jobs = 0, [], []
            if tables["versioned"]:
                cursor = await conn.execute(
                    "SELECT COALESCE(MAX(version), 0) AS v FROM schema_version"
                )
                found = await cursor.fetchone()
                version = int(found["v"]) if found else 0
            if tables["leased"]:
                cursor = await conn.execute(SQL_PROCESSES)
                rows = await cursor.fetchall()
                cursor = await conn.execute(SQL_JOBS_POSTGRES, (sorted(UNFINISHED_STATUSES),))
                jobs = [(r["status"], r["owner"], int(r["n"])) for r in await cursor.fetchall()]
    except psycopg.Error as error:
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise StorageError(f"cannot reach the database at {where}: {reason}") from error
    processes = _processes(rows, jobs, clock(), lease_seconds)
    return Inspection(server, where, version, POSTGRES_LATEST, processes, jobs)


async def inspect_sqlite(
    path: Path, *, lease_seconds: float, clock: Callable[[], float] = time.time
) -> Inspection:
    """Look at the SQLite database at ``path`` (read-only)."""
    return await asyncio.to_thread(_inspect_sqlite, path, lease_seconds, clock())


def _inspect_sqlite(path: Path, lease_seconds: float, now: float) -> Inspection:
    if not path.exists():
        return Inspection(f"SQLite {sqlite3.sqlite_version}", str(path), 0, SQLITE_LATEST, [], [])
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            db.row_factory = sqlite3.Row
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
            version = 0
            if "schema_version" in tables:
                version = int(
                    db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0
                )
            rows: list[Mapping[str, Any]] = []
            jobs: list[tuple[str, str | None, int]] = []
            if "processes" in tables:
                rows = [dict(row) for row in db.execute(SQL_PROCESSES)]
                statuses = sorted(UNFINISHED_STATUSES)
                found = db.execute(SQL_JOBS.format(", ".join("?" * len(statuses))), statuses)
                jobs = [(row["status"], row["owner"], int(row["n"])) for row in found]
    except sqlite3.Error as error:
        raise StorageError(f"cannot read the database at {path}: {error}") from error
    processes = _processes(rows, jobs, now, lease_seconds)
    server = f"SQLite {sqlite3.sqlite_version}"
    return Inspection(server, str(path), version, SQLITE_LATEST, processes, jobs)
