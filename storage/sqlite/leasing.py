"""Job leases on SQLite: one process at a time owns the database (its lock says so), so leases
mostly record which process follows a job, and a restart takes every lease at once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Final

from sqlite_utils import Database

from storage.job_records import UNFINISHED_STATUSES, Job
from storage.records import ProcessInfo
from storage.rows import job_from_row, to_json
from storage.rules import UNFINISHED_SQL, taken
from storage.sqlite.base import StoreBase
from storage.sqlite.sql import fetch_all, placeholders, write_transaction

_UNFINISHED: Final = tuple(sorted(UNFINISHED_STATUSES))
_IN_UNFINISHED: Final = f"status IN ({placeholders(len(_UNFINISHED))})"
SQL_RENEW: Final = (
    f"UPDATE jobs SET lease_until = ? WHERE owner = ? AND {_IN_UNFINISHED} RETURNING id"
)
SQL_SEEN: Final = (
    "INSERT INTO processes (id, host, pid, platforms, shards, started_at, seen_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
    " host = excluded.host, pid = excluded.pid, platforms = excluded.platforms,"
    " shards = excluded.shards, seen_at = excluded.seen_at"
)
SQL_EXPIRED: Final = (
    f"SELECT * FROM jobs WHERE status IN ({UNFINISHED_SQL}) AND COALESCE(lease_until, 0) < ?"
    " AND (owner IS NULL OR owner != ?) AND platform IN ({}) ORDER BY COALESCE(lease_until, 0)"
    " LIMIT ?"
)
SQL_NOT_MINE: Final = (
    f"SELECT * FROM jobs WHERE {_IN_UNFINISHED} AND (owner IS NULL OR owner != ?)"
    " AND platform IN ({}) ORDER BY created_at, id LIMIT ?"
)
SQL_TAKE: Final = (
    "UPDATE jobs SET owner = ?, lease_until = ?, lease_generation = lease_generation + 1"
    " WHERE id IN ({})"
)
SQL_LOAD: Final = f"SELECT COUNT(*) FROM jobs WHERE {_IN_UNFINISHED} AND platform IN ({{}})"
SQL_RELEASE: Final = f"UPDATE jobs SET lease_until = 0 WHERE owner = ? AND {_IN_UNFINISHED}"
SQL_FORGET: Final = "DELETE FROM processes WHERE id = ?"


class SqliteJobLeasing(StoreBase):
    """Lease methods of :class:`storage.sqlite.SqliteStore`."""

    @property
    def shared(self) -> bool:
        """False: a SQLite database belongs to one genbot process at a time."""
        return False

    async def heartbeat(self, process: ProcessInfo) -> frozenset[str]:
        """Renew this process's leases and record it as alive; the jobs it holds."""

        def work(db: Database) -> frozenset[str]:
            now = self._now()
            with write_transaction(db):
                rows = db.conn.execute(
                    SQL_RENEW, (now + self._lease_seconds, self._process_id, *_UNFINISHED)
                ).fetchall()
                db.conn.execute(SQL_SEEN, (self._process_id, *_process_values(process), now))
            return frozenset(str(row[0]) for row in rows)

        return await self._call(work)

    async def fair_share(self, platforms: Iterable[str]) -> int:
        """Every unfinished job on ``platforms``: the database has one process."""
        allowed = tuple(platforms)
        if not allowed:
            return 0
        sql = SQL_LOAD.format(placeholders(len(allowed)))

        def work(db: Database) -> int:
            return int(db.conn.execute(sql, (*_UNFINISHED, *allowed)).fetchone()[0])

        return await self._call(work)

    async def shed_leases(self, count: int) -> int:
        """Nothing to give: no other process shares this database."""
        return 0

    async def claim_jobs(
        self, platforms: Iterable[str], *, limit: int, take_live: bool = False
    ) -> list[Job]:
        """Take unfinished jobs nobody holds (or, with ``take_live``, every other process's)."""
        allowed = tuple(platforms)
        if not allowed or limit < 1:
            return []
        select = (SQL_NOT_MINE if take_live else SQL_EXPIRED).format(placeholders(len(allowed)))

        def work(db: Database) -> list[Job]:
            now = self._now()
            with write_transaction(db):
                if take_live:
                    values = (*_UNFINISHED, self._process_id, *allowed, limit)
                else:
                    values = (now, self._process_id, *allowed, limit)
                rows = fetch_all(db, select, values)
                if rows:
                    db.conn.execute(
                        SQL_TAKE.format(placeholders(len(rows))),
                        (self._process_id, now + self._lease_seconds, *(r["id"] for r in rows)),
                    )
            return [
                taken(job_from_row(row), self._process_id, now + self._lease_seconds)
                for row in rows
            ]

        return await self._call(work)

    async def release_leases(self) -> int:
        """End this process's leases now and drop it from the live processes."""

        def work(db: Database) -> int:
            with write_transaction(db):
                cursor = db.conn.execute(SQL_RELEASE, (self._process_id, *_UNFINISHED))
                db.conn.execute(SQL_FORGET, (self._process_id,))
            return cursor.rowcount

        return await self._call(work)

    async def wake_owner(self, job: Job) -> None:
        """Nothing to do: the one process using the database is the owner."""

    async def wakeups(self) -> AsyncIterator[str]:
        """None: no other process shares this database."""
        none: tuple[str, ...] = ()
        for job_id in none:
            yield job_id


def _process_values(process: ProcessInfo) -> tuple[object, ...]:
    return (process.host, process.pid, to_json(list(process.platforms)), process.shards,
            process.started_at)  # fmt: skip
