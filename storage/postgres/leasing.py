"""Job leases on PostgreSQL: claims with ``FOR UPDATE SKIP LOCKED``, renewals by heartbeat,
and ``LISTEN``/``NOTIFY`` wakeups of a job's owner."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Final

import psycopg
from psycopg import AsyncConnection, sql
from psycopg.types.json import Jsonb

from storage.errors import StorageError
from storage.job_records import IN_FLIGHT_STATUSES, UNFINISHED_STATUSES, Job
from storage.postgres.base import Connection, PostgresBase, Query
from storage.process import wakeup_channel
from storage.records import ProcessInfo
from storage.rows import job_from_row
from storage.rules import share_of, taken

_UNFINISHED: Final = sorted(UNFINISHED_STATUSES)
_IN_FLIGHT: Final = sorted(IN_FLIGHT_STATUSES)
SQL_RENEW: Final[Query] = (
    "UPDATE jobs SET lease_until = %s WHERE owner = %s AND status = ANY(%s) RETURNING id"
)
SQL_SEEN: Final[Query] = (
    "INSERT INTO processes (id, host, pid, platforms, shards, started_at, seen_at)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET"
    " host = excluded.host, pid = excluded.pid, platforms = excluded.platforms,"
    " shards = excluded.shards, seen_at = excluded.seen_at"
)
SQL_EXPIRED: Final[Query] = (
    "SELECT * FROM jobs WHERE status IN ('creating', 'failed', 'finished', 'pending',"
    " 'posting', 'processing', 'reporting', 'retry', 'staged', 'submitted', 'unknown')"
    " AND COALESCE(lease_until, 0) < %s AND (owner IS NULL OR owner <> %s)"
    " AND platform = ANY(%s) ORDER BY COALESCE(lease_until, 0) LIMIT %s FOR UPDATE SKIP LOCKED"
)
"""Jobs no live process holds, found through ``jobs_by_lease_expiry`` (its predicate spelled
out), those whose lease ended first taken first."""
SQL_NOT_MINE: Final[Query] = (
    "SELECT * FROM jobs WHERE status = ANY(%s) AND (owner IS NULL OR owner <> %s)"
    " AND platform = ANY(%s) ORDER BY created_at, id LIMIT %s FOR UPDATE SKIP LOCKED"
)
SQL_TAKE: Final[Query] = (
    "UPDATE jobs SET owner = %s, lease_until = %s, lease_generation = lease_generation + 1"
    " WHERE id = ANY(%s)"
)
SQL_LOAD: Final[Query] = (
    "SELECT platform, COUNT(*) AS jobs, (SELECT COUNT(*) FROM processes"
    " WHERE seen_at >= %s AND platforms ? jobs.platform) AS serving"
    " FROM jobs WHERE status = ANY(%s) AND platform = ANY(%s) GROUP BY platform"
)
SQL_SHED: Final[Query] = (
    "UPDATE jobs SET owner = NULL, lease_until = 0 WHERE id IN (SELECT id FROM jobs"
    " WHERE owner = %s AND status = ANY(%s) ORDER BY created_at DESC, id LIMIT %s"
    " FOR UPDATE SKIP LOCKED)"
)
SQL_RELEASE: Final[Query] = "UPDATE jobs SET lease_until = 0 WHERE owner = %s AND status = ANY(%s)"
SQL_FORGET: Final[Query] = "DELETE FROM processes WHERE id = %s"
SQL_NOTIFY: Final[Query] = "SELECT pg_notify(%s, %s)"


class PostgresJobLeasing(PostgresBase):
    """Lease methods of :class:`storage.postgres.PostgresStore`."""

    @property
    def shared(self) -> bool:
        """True: several genbot processes use one PostgreSQL database."""
        return True

    async def heartbeat(self, process: ProcessInfo) -> frozenset[str]:
        """Renew this process's leases and record it as alive; the jobs it holds."""
        now = self._now()

        async def work(conn: Connection) -> frozenset[str]:
            cursor = await conn.execute(
                SQL_RENEW, (now + self._lease_seconds, self._process_id, _UNFINISHED)
            )
            held = frozenset(str(row["id"]) for row in await cursor.fetchall())
            await conn.execute(
                SQL_SEEN,
                (
                    self._process_id,
                    process.host,
                    process.pid,
                    Jsonb(list(process.platforms)),
                    process.shards,
                    process.started_at,
                    now,
                ),
            )
            return held

        return await self._attempt(work, transaction=True)

    async def fair_share(self, platforms: Iterable[str]) -> int:
        """This process's share of the unfinished jobs (see ``JobLeasing.fair_share``)."""
        live_since = self._now() - self._lease_seconds
        rows = await self._fetch_all(SQL_LOAD, (live_since, _UNFINISHED, list(platforms)))
        return share_of([(int(row["jobs"]), int(row["serving"])) for row in rows])

    async def shed_leases(self, count: int) -> int:
        """Give back up to ``count`` jobs in flight (see ``JobLeasing.shed_leases``)."""
        if count < 1:
            return 0
        return await self._execute(SQL_SHED, (self._process_id, _IN_FLIGHT, count))

    async def claim_jobs(
        self, platforms: Iterable[str], *, limit: int, take_live: bool = False
    ) -> list[Job]:
        """Take unfinished jobs nobody holds (or, with ``take_live``, every other process's):
        rows another claimer has locked are skipped, so concurrent claimers split the work
        and no job is taken twice."""
        allowed = list(platforms)
        if not allowed or limit < 1:
            return []
        now = self._now()
        lease_until = now + self._lease_seconds

        async def work(conn: Connection) -> list[Job]:
            if take_live:
                values = (_UNFINISHED, self._process_id, allowed, limit)
                cursor = await conn.execute(SQL_NOT_MINE, values)
            else:
                cursor = await conn.execute(SQL_EXPIRED, (now, self._process_id, allowed, limit))
            free = [job_from_row(row) for row in await cursor.fetchall()]
            if free:
                ids = [job.id for job in free]
                await conn.execute(SQL_TAKE, (self._process_id, lease_until, ids))
            return free

        free = await self._attempt(work, transaction=True)
        return [taken(job, self._process_id, lease_until) for job in free]

    async def release_leases(self) -> int:
        """End this process's leases now and drop it from the live processes."""
        async with self._transaction() as conn:
            cursor = await conn.execute(SQL_RELEASE, (self._process_id, _UNFINISHED))
            await conn.execute(SQL_FORGET, (self._process_id,))
            return cursor.rowcount

    async def wake_owner(self, job: Job) -> None:
        """``NOTIFY`` the owner's channel with the job's id (delivered at commit)."""
        if job.owner is None or job.owner == self._process_id:
            return
        await self._execute(SQL_NOTIFY, (wakeup_channel(job.owner), job.id))

    async def wakeups(self) -> AsyncIterator[str]:
        """``LISTEN`` on this process's channel on a connection of its own and yield each
        job id as it arrives; :class:`StorageError` when the connection is lost."""
        try:
            conn = await AsyncConnection.connect(self._url, autocommit=True, connect_timeout=10)
        except psycopg.Error as error:
            raise StorageError(f"cannot listen for wakeups ({self.where}): {error}") from error
        try:
            channel = sql.Identifier(wakeup_channel(self._process_id))
            await conn.execute(sql.SQL("LISTEN {}").format(channel))
            async for notice in conn.notifies():
                yield notice.payload
        except psycopg.Error as error:
            raise StorageError(f"wakeups stopped ({self.where}): {error}") from error
        finally:
            await conn.close()
