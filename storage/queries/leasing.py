"""Which process follows which job: leases held through the owner's own lease (one row per
process, renewed by its heartbeat), claims of the jobs no live process holds, and wakeups of a
job's owner."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field, replace
from typing import Final

from storage.errors import StorageError
from storage.queries.base import Clock, Observe, Owner
from storage.queries.jobs import job_from_row
from storage.records.jobs import (
    IN_FLIGHT_STATUSES,
    UNFINISHED_STATUSES,
    Heartbeat,
    Job,
    ProcessInfo,
)
from storage.sql.dialect import marks
from storage.sql.schema import UNFINISHED_LITERALS
from storage.sql.session import Database, Row, Session, Values, to_json

_UNFINISHED: Final = tuple(sorted(UNFINISHED_STATUSES))
_IN_UNFINISHED: Final = f"status IN ({marks(len(_UNFINISHED))})"
_IN_FLIGHT: Final = tuple(sorted(IN_FLIGHT_STATUSES))
SQL_HELD: Final = f"SELECT id FROM jobs WHERE owner = ? AND {_IN_UNFINISHED}"
SQL_SEEN: Final = (
    "INSERT INTO processes (id, host, pid, platforms, shards, started_at, seen_at, lease_until)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
    " host = excluded.host, pid = excluded.pid, platforms = excluded.platforms,"
    " shards = excluded.shards, seen_at = excluded.seen_at, lease_until = excluded.lease_until"
)
"""The heartbeat's one write: this process's row, whatever number of jobs it holds (renewing
each job's lease rewrote every row it held, and locked them while deliveries waited)."""
SQL_GONE_OWNERS: Final = (
    "WITH RECURSIVE owners (id) AS ("
    f"SELECT (SELECT owner FROM jobs WHERE status IN ({UNFINISHED_LITERALS})"
    " AND owner IS NOT NULL ORDER BY owner LIMIT 1)"
    f" UNION ALL SELECT (SELECT owner FROM jobs WHERE status IN ({UNFINISHED_LITERALS})"
    " AND owner > owners.id ORDER BY owner LIMIT 1) FROM owners WHERE owners.id IS NOT NULL)"
    " SELECT id FROM owners WHERE id IS NOT NULL AND id <> ?"
    " AND id NOT IN (SELECT id FROM processes WHERE processes.lease_until >= ?)"
)
"""The owners of unfinished jobs whose lease ran out or who have none (no heartbeat yet, or
released), but this process, found by skipping through ``jobs_unfinished_by_owner`` from one
owner to the next: one index entry per owner, however many jobs each holds."""
SQL_EXPIRED: Final = (
    f"SELECT * FROM jobs WHERE status IN ({UNFINISHED_LITERALS}) AND COALESCE(lease_until, 0) < ?"
    " AND (owner IS NULL{}) AND platform IN ({}) ORDER BY COALESCE(lease_until, 0) LIMIT ?"
)
"""Jobs no live process holds: nobody's, or their owner's lease ran out (``SQL_GONE_OWNERS``),
and past the lease they were created or claimed with, found through
``jobs_unfinished_by_owner`` (its predicate spelled out), those leased longest ago first."""
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
SQL_HOLD_ROW: Final = (
    "INSERT INTO processes (id, host, pid, started_at, seen_at) VALUES (?, '', 0, 0, 0)"
    " ON CONFLICT (id) DO UPDATE SET seen_at = processes.seen_at"
)
"""Locks this process's row before the release deletes it, creating it if missing: a writer of
the row that has not committed yet (a pending-command claim recording the process alive,
:data:`storage.queries.playground.SQL_ALIVE`) holds its key, so the release waits for it and
then deletes what it wrote; a plain ``DELETE`` does not see an uncommitted insert, and the
claim would write the row back after the release."""
SQL_FORGET: Final = "DELETE FROM processes WHERE id = ?"


def wakeup_channel(process_id: str) -> str:
    """The ``LISTEN``/``NOTIFY`` channel of a process (a short identifier)."""
    return "genbot_" + hashlib.sha256(process_id.encode()).hexdigest()[:24]


@dataclass
class JobLeasing:
    """Which process follows which job. A job is created leased to the process that creates
    it (:class:`storage.JobAdmission`), until ``jobs.lease_until``; it stays leased while its
    owner's own lease (``processes.lease_until``, renewed by its heartbeat: one row however
    many jobs it holds) lasts. A job past both (its process died or lost the database) is
    taken over by another process with an adapter for the job's platform. It acts for one
    process, :attr:`owner`. On SQLite one process owns the database, so leases mostly record
    which process follows a job and a restart takes them all at once."""

    db: Database
    clock: Clock
    owner: Owner
    observe: Observe | None = field(default=None, kw_only=True)
    """Told each heartbeat's round trip and the server's clock read in it (the store's
    :meth:`storage.sql.server_clock.ServerClock.observe`), on a database with a server of its
    own; None: the heartbeat reads no server clock."""
    released: bool = field(default=False, init=False)
    """Whether :meth:`release_leases` was asked (a clean stop; set from the ask on, whether the
    release then succeeds, fails or times out) and no heartbeat recorded this process alive
    since: its pending-command claims then take nothing
    (:meth:`storage.PlaygroundHistory.claim_pending_commands`), so nothing records a stopping
    process alive again."""

    @property
    def shared(self) -> bool:
        """Whether other processes may hold jobs of this database at the same time
        (PostgreSQL); SQLite belongs to one process at a time."""
        return self.db.dialect.shared

    async def heartbeat(self, process: ProcessInfo, *, share_of: Iterable[str] = ()) -> Heartbeat:
        """Renew this process's lease for its lease (one row, ``processes.lease_until``: its
        jobs are held while it lasts, however many there are) and record it as alive (with
        ``process``); the ids of the jobs it holds (a job it was working on that is missing
        was taken over: it stops working on it) and its fair share of the unfinished jobs on
        the platforms ``share_of`` (none: 0), all in one transaction. The share is, for each
        platform, its unfinished jobs divided among the live processes serving it, this one
        included (rounded up; all of them where the database has one process): a process
        takes over at most its share, and gives back what it holds beyond it
        (:meth:`shed_leases`), so the load evens out when a process joins. The lease runs
        from when the transaction began (not from before a wait for a connection), and a
        renewal that would be written only after the lease it renews ran out is rolled back
        and raises :class:`StorageError` (it holds nothing it could count on). With
        :attr:`observe`, the row's write also reads the server's clock, and the round trip is
        told to :attr:`observe` once the renewal committed."""
        allowed = tuple(share_of)
        server_time = self.db.dialect.server_time if self.observe is not None else None
        sampled: list[tuple[float, float, float]] = []

        async def work(tx: Session) -> Heartbeat:
            now = self.clock()
            seen = (
                self.owner.process_id, process.host, process.pid, to_json(list(process.platforms)),
                process.shards, process.started_at, now, now + self.owner.lease_seconds,
            )  # fmt: skip
            sampled.clear()
            if server_time is None:
                await tx.execute(SQL_SEEN, seen)
            else:
                row = await tx.fetch_one(f"{SQL_SEEN} RETURNING {server_time} AS server_now", seen)
                assert row is not None
                sampled.append((now, float(row["server_now"]), self.clock()))
            asked: list[tuple[str, Values]] = [(SQL_HELD, (self.owner.process_id, *_UNFINISHED))]
            if allowed:
                serving = tx.dialect.json_contains("platforms", "jobs.platform")
                load = SQL_LOAD.format(serving, marks(len(allowed)))
                asked.append((load, (now - self.owner.lease_seconds, *_UNFINISHED, *allowed)))
            held_rows, *load_rows = await tx.fetch_each(asked)
            held = frozenset(str(row["id"]) for row in held_rows)
            late = self.clock() - now
            if late >= self.owner.lease_seconds:
                raise StorageError(
                    f"the lease heartbeat took {late:.1f} s, longer than a lease"
                    f" ({self.owner.lease_seconds:g} s): renewal rolled back"
                )
            return Heartbeat(held, self._share(load_rows[0] if load_rows else []))

        beat = await self.db.transaction(work, repeatable=True)
        self.released = False
        if self.observe is not None and sampled:
            self.observe(*sampled[0])
        return beat

    def _share(self, load: list[Row]) -> int:
        """The fair share :data:`SQL_LOAD`'s rows give (see :meth:`heartbeat`)."""
        shares = [(int(r["jobs"]), int(r["serving"]) if self.shared else 1) for r in load]
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
        leased, or both the lease the job was created or claimed with and its owner's lease
        ran out), those leased longest ago first; rows another claimer is taking are skipped,
        so concurrent claimers split the work and no job is taken twice. Each claim is a new
        lease (its generation goes up). With ``take_live`` also other processes' live leases:
        only when none can be running (SQLite's one process, at start). The jobs as they
        were, now owned by this process."""
        allowed = tuple(platforms)
        if not allowed or limit < 1:
            return []
        now, me = self.clock(), self.owner.process_id
        lease_until = now + self.owner.lease_seconds

        async def work(tx: Session) -> list[Job]:
            if take_live:
                found = SQL_NOT_MINE.format(marks(len(allowed))) + tx.dialect.skip_locked
                rows = await tx.fetch_all(found, (*_UNFINISHED, me, *allowed, limit))
            else:
                gone = [row["id"] for row in await tx.fetch_all(SQL_GONE_OWNERS, (me, now))]
                owned = f" OR owner IN ({marks(len(gone))})" if gone else ""
                found = SQL_EXPIRED.format(owned, marks(len(allowed))) + tx.dialect.skip_locked
                rows = await tx.fetch_all(found, (now, *gone, *allowed, limit))
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
        processes; how many were released. From when it is asked, this process claims no
        pending command (see :attr:`released`), and a claim already under way that wrote
        the process's row is waited for and its row deleted (:data:`SQL_HOLD_ROW`). Not
        covered: a claim that passed its check before the release was asked but whose
        statement reaches the database only after the release began; the process's row is
        then alive again until a later release (``Tracker.drain`` runs twice in a stop) or
        until it stops beating."""
        self.released = True

        async def work(tx: Session) -> int:
            await tx.execute(SQL_HOLD_ROW, (self.owner.process_id,))
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
