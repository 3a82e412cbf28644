"""Which process follows which job: leases renewed by the owner's heartbeat, claims of the jobs
no live process holds, and wakeups of a job's owner."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, replace
from typing import Final

from storage.errors import StorageError
from storage.queries.base import Clock, Owner
from storage.queries.jobs import job_from_row
from storage.records.jobs import IN_FLIGHT_STATUSES, UNFINISHED_STATUSES, Job, ProcessInfo
from storage.sql.dialect import marks
from storage.sql.schema import UNFINISHED_LITERALS
from storage.sql.session import Database, Session, to_json

_UNFINISHED: Final = tuple(sorted(UNFINISHED_STATUSES))
_IN_UNFINISHED: Final = f"status IN ({marks(len(_UNFINISHED))})"
_IN_FLIGHT: Final = tuple(sorted(IN_FLIGHT_STATUSES))
SQL_RENEW: Final = (
    "UPDATE jobs SET lease_until = ? WHERE id IN (SELECT id FROM jobs"
    f" WHERE owner = ? AND {_IN_UNFINISHED}{{}})"
)
"""The renewal takes only the rows no other transaction holds (``SKIP LOCKED``): waiting for
them while holding the others deadlocked with moves of several jobs, which take their rows in
another order; a row skipped is renewed at the next beat."""
SQL_HELD: Final = f"SELECT id FROM jobs WHERE owner = ? AND {_IN_UNFINISHED}"
SQL_SEEN: Final = (
    "INSERT INTO processes (id, host, pid, platforms, shards, started_at, seen_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
    " host = excluded.host, pid = excluded.pid, platforms = excluded.platforms,"
    " shards = excluded.shards, seen_at = excluded.seen_at"
)
SQL_EXPIRED: Final = (
    f"SELECT * FROM jobs WHERE status IN ({UNFINISHED_LITERALS}) AND COALESCE(lease_until, 0) < ?"
    " AND (owner IS NULL OR owner <> ?) AND platform IN ({}) ORDER BY COALESCE(lease_until, 0)"
    " LIMIT ?"
)
"""Jobs no live process holds, found through ``jobs_by_lease_expiry`` (its predicate spelled
out), those whose lease ended first taken first."""
SQL_NOT_MINE: Final = (
    f"SELECT * FROM jobs WHERE {_IN_UNFINISHED} AND (owner IS NULL OR owner <> ?)"
    " AND platform IN ({}) ORDER BY created_at, id LIMIT ?"
)
SQL_TAKE: Final = (
    "UPDATE jobs SET owner = ?, lease_until = ?, lease_generation = lease_generation + 1"
    " WHERE id IN ({})"
)
SQL_LOAD: Final = (
    "SELECT platform, COUNT(*) AS jobs, (SELECT COUNT(*) FROM processes"
    " WHERE seen_at >= ? AND {}) AS serving"
    f" FROM jobs WHERE {_IN_UNFINISHED} AND platform IN ({{}}) GROUP BY platform"
)
SQL_SHED: Final = (
    "UPDATE jobs SET owner = NULL, lease_until = 0 WHERE id IN (SELECT id FROM jobs"
    f" WHERE owner = ? AND status IN ({marks(len(_IN_FLIGHT))}) ORDER BY created_at DESC, id"
    " LIMIT ?{})"
)
SQL_RELEASE: Final = f"UPDATE jobs SET lease_until = 0 WHERE owner = ? AND {_IN_UNFINISHED}"
SQL_FORGET: Final = "DELETE FROM processes WHERE id = ?"


def wakeup_channel(process_id: str) -> str:
    """The ``LISTEN``/``NOTIFY`` channel of a process (a short identifier)."""
    return "genbot_" + hashlib.sha256(process_id.encode()).hexdigest()[:24]


@dataclass
class JobLeasing:
    """Which process follows which job. A job is created leased to the process that creates
    it (:class:`storage.JobAdmission`); the owner's heartbeat renews its leases; a lease that
    ran out (its process died or lost the database) is taken over by another process with an
    adapter for the job's platform. It acts for one process, :attr:`owner`. On SQLite one
    process owns the database, so leases mostly record which process follows a job and a
    restart takes them all at once."""

    db: Database
    clock: Clock
    owner: Owner

    @property
    def shared(self) -> bool:
        """Whether other processes may hold jobs of this database at the same time
        (PostgreSQL); SQLite belongs to one process at a time."""
        return self.db.dialect.shared

    async def heartbeat(self, process: ProcessInfo) -> frozenset[str]:
        """Renew this process's leases on its unfinished jobs for its lease (those another
        transaction is writing at that moment at the next beat: see ``SQL_RENEW``) and
        record it as alive (with ``process``); the ids of the jobs it holds (a job it was
        working on that is missing was taken over: it stops working on it). The leases run
        from when the transaction began (not from before a wait for a connection), and a
        renewal that would be written only after the leases it writes ran out is rolled back
        and raises :class:`StorageError` (it holds nothing it could count on)."""

        async def work(tx: Session) -> frozenset[str]:
            now = self.clock()
            mine = (self.owner.process_id, *_UNFINISHED)
            renew = SQL_RENEW.format(tx.dialect.skip_locked)
            await tx.execute(renew, (now + self.owner.lease_seconds, *mine))
            held = frozenset(str(row["id"]) for row in await tx.fetch_all(SQL_HELD, mine))
            seen = (
                self.owner.process_id, process.host, process.pid, to_json(list(process.platforms)),
                process.shards, process.started_at, now,
            )  # fmt: skip
            await tx.execute(SQL_SEEN, seen)
            late = self.clock() - now
            if late >= self.owner.lease_seconds:
                raise StorageError(
                    f"the lease heartbeat took {late:.1f} s, longer than a lease"
                    f" ({self.owner.lease_seconds:g} s): renewal rolled back"
                )
            return held

        return await self.db.transaction(work, repeatable=True)

    async def fair_share(self, platforms: Iterable[str]) -> int:
        """How many unfinished jobs on ``platforms`` this process should hold: for each
        platform, its unfinished jobs divided among the live processes serving it (rounded
        up; all of them where the database has one process). A process takes over at most its
        share, and gives back what it holds beyond it (:meth:`shed_leases`), so the load evens
        out when a process joins."""
        allowed = tuple(platforms)
        if not allowed:
            return 0
        serving = self.db.dialect.json_contains("platforms", "jobs.platform")
        load = SQL_LOAD.format(serving, marks(len(allowed)))
        live_since = self.clock() - self.owner.lease_seconds
        rows = await self.db.fetch_all(load, (live_since, *_UNFINISHED, *allowed))
        shares = [(int(r["jobs"]), int(r["serving"]) if self.shared else 1) for r in rows]
        return sum(-(-jobs // max(serving, 1)) for jobs, serving in shares)

    async def shed_leases(self, count: int) -> int:
        """Give up to ``count`` of this process's jobs in flight at the provider (the newest
        first; never one being created or delivered) back to no owner, for other processes to
        claim; how many (none where the database has one process)."""
        if count < 1 or not self.shared:
            return 0
        shed = SQL_SHED.format(self.db.dialect.skip_locked)
        return await self.db.execute(
            shed, (self.owner.process_id, *_IN_FLIGHT, count), repeatable=True
        )

    async def claim_jobs(
        self, platforms: Iterable[str], *, limit: int, take_live: bool = False
    ) -> list[Job]:
        """Take up to ``limit`` unfinished jobs on ``platforms`` that no process holds (never
        leased, or the lease ran out), oldest first; rows another claimer is taking are
        skipped, so concurrent claimers split the work and no job is taken twice. Each claim is
        a new lease (its generation goes up). With ``take_live`` also other processes' live
        leases: only when none can be running (SQLite's one process, at start). The jobs as
        they were, now owned by this process."""
        allowed = tuple(platforms)
        if not allowed or limit < 1:
            return []
        now, me = self.clock(), self.owner.process_id
        lease_until = now + self.owner.lease_seconds
        select = (SQL_NOT_MINE if take_live else SQL_EXPIRED).format(marks(len(allowed)))
        head = _UNFINISHED if take_live else (now,)

        async def work(tx: Session) -> list[Job]:
            found = select + tx.dialect.skip_locked
            rows = await tx.fetch_all(found, (*head, me, *allowed, limit))
            if rows:
                take = SQL_TAKE.format(marks(len(rows)))
                await tx.execute(take, (me, lease_until, *(r["id"] for r in rows)))
            return [job_from_row(row) for row in rows]

        free = await self.db.transaction(work, repeatable=True)
        return [
            replace(
                job, owner=me, lease_until=lease_until, lease_generation=job.lease_generation + 1
            )
            for job in free
        ]

    async def release_leases(self) -> int:
        """End this process's leases now (a clean stop) and drop it from the live
        processes; how many were released."""

        async def work(tx: Session) -> int:
            released = await tx.execute(SQL_RELEASE, (self.owner.process_id, *_UNFINISHED))
            await tx.execute(SQL_FORGET, (self.owner.process_id,))
            return released

        return await self.db.transaction(work)

    async def wake_owner(self, job: Job) -> None:
        """Ask ``job``'s owner (another process) to look at it now: ``NOTIFY`` on the owner's
        channel with the job's id (nothing to do where the database has one process)."""
        notify = self.db.dialect.notify
        if notify is None or job.owner is None or job.owner == self.owner.process_id:
            return
        await self.db.execute(notify, (wakeup_channel(job.owner), job.id), repeatable=True)

    async def wakeups(self) -> AsyncIterator[str]:
        """Ids of the jobs other processes asked this one to look at, as they come; raises
        :class:`StorageError` when the connection is lost. Empty on an unshared database."""
        async for job_id in self.db.listen(wakeup_channel(self.owner.process_id)):
            if job_id is not None:
                yield job_id
