"""Job leases for the tracker: the heartbeat and the wakeup listener.

Every quarter of ``[storage] lease_seconds`` the heartbeat renews this process's lease (one row,
which holds every job the process owns: a beat costs the same at ten jobs as at ten thousand and
locks none of them), tells the cluster it is alive, with its platforms and shards, and tells the
tracker which jobs it still holds (a job taken over while this process stalled is no longer
among them: the tracker stops working on it, and its fenced writes would change nothing anyway).
The same transaction tells it its fair share (the unfinished jobs of each platform divided among
the live processes serving it): an idle process's beat is one transaction. Then it takes over jobs
no live process holds on the platforms this process has an adapter for, in batches, handing each
batch to the tracker to settle — at most its fair share — and gives back what it
holds beyond its share and a margin, so a process that joins gets its part of the load. So a
process killed with ``kill -9`` loses its jobs to the others within about two leases; a clean
stop releases them at once.

The jobs a heartbeat took over are settled (delivery claims released, unconfirmed creations
decided and their messages edited) in a task of its own, so a slow platform neither delays the
next heartbeat nor is cut short by the heartbeat's deadline.

A process takes over nothing until it has reached the database for a whole lease: after an
outage (a restart, a stall) every lease looks expired, and the live processes need one
heartbeat to renew theirs, so the first process back would otherwise take everyone's jobs. A
heartbeat that took longer than one beat period counts as a stall too (the lease is measured
again from its answer): a stall shorter than the heartbeat's deadline delays it without failing
it, and leases expired for everyone meanwhile. Both are measured on the monotonic clock, so a
wall clock stepped forward during a heartbeat (an NTP step) is no stall. The renewal's
``lease_until`` is on the store's clock, which every process compares it with: on PostgreSQL the
database server's, carried by this process's monotonic clock and checked in each heartbeat's own
round trip (:class:`storage.sql.server_clock.ServerClock`), so neither hosts whose wall clocks
differ nor a step of this host's wall clock moves a lease; a renewal that store's clock says was
written a lease or more late is rolled back, which counts as not reaching the database
(:meth:`storage.JobLeasing.heartbeat`).

On a shared database (PostgreSQL) a listener also waits for wakeups: another process that
received a webhook for a job this one holds stores it and asks the owner to act now.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Iterable

from bot.kernel import OUTAGE, backoff, metrics
from storage import Job, JobLeasing, ProcessInfo, StorageError

log = logging.getLogger(__name__)

CLAIM_BATCH = 500
"""Jobs taken over per claim; a heartbeat claims batches until one comes back short or its
share is full."""
SHED_MARGIN = 2
"""A process gives jobs back (down to its share) only when it holds more than its share plus a
tenth of it, and at least this many more, so small differences do not move jobs to and fro."""
BEATS_PER_LEASE = 4
WAKEUP_RETRY_SECONDS = 30.0
"""The longest pause before listening again after the wakeup connection was lost (the pause
doubles from one second while it keeps failing)."""
RELEASE_TIMEOUT = 5.0
SETTLE_STOP_SECONDS = 5.0
"""How long a stop lets the settling of jobs just taken over finish."""

TakeOver = Callable[[list[Job]], Awaitable[None]]
Woken = Callable[[str], Awaitable[None]]
Held = Callable[[frozenset[str], int], None]
"""Told the jobs this process still holds, and the number of the heartbeat that asked
(:attr:`Leases.asked` when it asked)."""


class Leases:
    """Renews, takes over and releases the leases of one process (see the module docstring).
    ``clock`` is the store's (``store.clock``), on which the process's start is stamped."""

    def __init__(
        self,
        store: JobLeasing,
        platforms: Callable[[], Iterable[str]],
        take_over: TakeOver,
        woken: Woken,
        *,
        held: Held = lambda _jobs, _beat: None,
        shards: Callable[[], str | None] = lambda: None,
        clock: Callable[[], float],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._platforms = platforms
        self._take_over = take_over
        self._woken = woken
        self._still_held = held
        self._shards = shards
        self._monotonic = monotonic
        self._started_at = clock()
        self._reachable_since: float | None = None
        """Since when (on the monotonic clock) this process has reached the database."""
        self._tasks: list[asyncio.Task[None]] = []
        self._settling: set[asyncio.Task[None]] = set()
        self.held = 0
        """Leases this process held at its last heartbeat (with what it took over then)."""
        self.asked = 0
        """How many heartbeats have asked: the number of the latest (it goes up before the
        heartbeat's transaction, so what happens after is numbered at least that)."""
        self.held_beat: int | None = None
        """The number of the heartbeat that counted :attr:`held` (None before the first):
        it counted everything committed before it asked (its snapshot is taken later still),
        and what it did not count is numbered at least this; counted, not timed, so a wall
        clock stepped back cannot reorder them."""
        self.taken_over = 0
        """Jobs this process took over since it started."""

    def process_info(self) -> ProcessInfo:
        """What the heartbeat tells the cluster about this process."""
        return ProcessInfo(
            host=socket.gethostname(),
            pid=os.getpid(),
            platforms=tuple(sorted(self._platforms())),
            started_at=self._started_at,
            shards=self._shards(),
        )

    async def beat(self, *, take_live: bool = False) -> int:
        """Renew this process's lease, then take over what no live process holds, up to its
        fair share, and give back what it holds beyond it (see the module docstring; with
        ``take_live``: everything another process holds, for SQLite's restart); how many
        jobs were taken over (settled before it returns)."""
        taken = await self._renew(take_live=take_live)
        if taken:
            await self._take_over(taken)
        return len(taken)

    async def _renew(self, *, take_live: bool = False) -> list[Job]:
        """The database's part of :meth:`beat`; the jobs taken over, not settled yet."""
        platforms = list(self._platforms())
        self.asked += 1
        number, asked_at = self.asked, self._monotonic()
        beat = await self._store.heartbeat(
            self.process_info(), share_of=() if take_live else platforms
        )
        held = beat.held
        answered_at = self._monotonic()
        self._still_held(held, number)
        slow = answered_at - asked_at > self._store.owner.lease_seconds / BEATS_PER_LEASE
        if slow or self._reachable_since is None:
            self._reachable_since = answered_at if slow else asked_at
        taken: list[Job] = []
        shed = 0
        if take_live:
            taken = await self._claim(platforms, None, take_live=True)
        elif platforms and answered_at - self._reachable_since >= self._store.owner.lease_seconds:
            taken = await self._claim(platforms, beat.share - len(held))
            excess = len(held) + len(taken) - beat.share
            if excess > max(SHED_MARGIN, beat.share // 10):
                shed = await self._store.shed_leases(excess)
        if taken:
            log.info("took over %d jobs no live process held", len(taken))
            metrics.jobs_taken_over(len(taken))
        if shed:
            log.info("gave back %d jobs beyond this process's share for others to take", shed)
        self.taken_over += len(taken)
        self.held = len(held) + len(taken) - shed
        self.held_beat = number
        metrics.set_leases(self.held)
        return taken

    async def _claim(
        self, platforms: list[str], room: int | None, *, take_live: bool = False
    ) -> list[Job]:
        """Take over jobs in batches, at most ``room`` (None: no bound)."""
        taken: list[Job] = []
        while platforms and (room is None or len(taken) < room):
            batch = CLAIM_BATCH if room is None else min(CLAIM_BATCH, room - len(taken))
            jobs = await self._store.claim_jobs(platforms, limit=batch, take_live=take_live)
            taken += jobs
            if len(jobs) < batch:
                break
        return taken

    def _settle_soon(self, jobs: list[Job]) -> None:
        """Settle jobs the heartbeat took over in a task of their own: settling writes to
        the platforms (a job's message), which must neither hold up the next heartbeat nor be
        cut short by the heartbeat's deadline."""
        task = asyncio.create_task(self._settle(jobs), name="genbot-takeover")
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    async def _settle(self, jobs: list[Job]) -> None:
        try:
            await self._take_over(jobs)
        except StorageError as error:
            OUTAGE.failed("job takeover", error)
        except Exception:
            log.exception("settling %d jobs taken over failed", len(jobs))

    def start(self) -> None:
        """Start the heartbeat, and the wakeup listener on a shared database."""
        self._tasks.append(asyncio.create_task(self._beating(), name="genbot-leases"))
        if self._store.shared:
            self._tasks.append(asyncio.create_task(self._listening(), name="genbot-wakeups"))

    async def stop(self) -> None:
        """Stop the heartbeat and the listener, and let the settling of what it took over
        finish for up to ``SETTLE_STOP_SECONDS`` (the leases stay until released or
        expired)."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        settling = list(self._settling)
        if settling:
            _, late = await asyncio.wait(settling, timeout=SETTLE_STOP_SECONDS)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)

    async def release(self) -> None:
        """Release this process's leases (a clean stop); a failure is logged, not raised."""
        try:
            async with asyncio.timeout(RELEASE_TIMEOUT):
                released = await self._store.release_leases()
        except (StorageError, TimeoutError) as error:
            log.warning("could not release this process's job leases: %s", error)
            return
        if released:
            log.info("released %d job leases for other processes to take over", released)
        self.held = 0
        metrics.set_leases(0)

    async def _beating(self) -> None:
        period = self._store.owner.lease_seconds / BEATS_PER_LEASE
        while True:
            await asyncio.sleep(period)
            try:
                async with asyncio.timeout(self._store.owner.lease_seconds):
                    taken = await self._renew()
                if taken:
                    self._settle_soon(taken)
            except (StorageError, TimeoutError) as error:
                self._reachable_since = None
                OUTAGE.failed("lease heartbeat", error)
            except Exception:
                log.exception("job lease heartbeat failed")
            else:
                OUTAGE.succeeded()

    async def _listening(self) -> None:
        failures = 0
        while True:
            try:
                async for job_id in self._store.wakeups():
                    failures = 0
                    with contextlib.suppress(StorageError):
                        await self._woken(job_id)
            except StorageError as error:
                failures += 1
                OUTAGE.failed("wakeup listener", error)
            await asyncio.sleep(backoff(failures, most=WAKEUP_RETRY_SECONDS))
