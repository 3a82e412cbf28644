"""Job leases for the tracker: the heartbeat and the wakeup listener.

Every quarter of ``[storage] lease_seconds`` the heartbeat renews this process's leases (and
tells the cluster it is alive, with its platforms and shards), then takes over the jobs no live
process holds on the platforms this process has an adapter for, in batches, handing each batch
to the tracker to settle. So a process killed with ``kill -9`` loses its jobs to the others
within one lease and a quarter; a clean stop releases them at once.

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

from bot import metrics
from storage import Job, JobLeasing, ProcessInfo, StorageError

log = logging.getLogger(__name__)

CLAIM_BATCH = 500
"""Jobs taken over per claim; a heartbeat claims batches until one comes back short."""
BEATS_PER_LEASE = 4
WAKEUP_RETRY_SECONDS = 5.0
"""The pause before listening again after the wakeup connection was lost."""
RELEASE_TIMEOUT = 5.0

TakeOver = Callable[[list[Job]], Awaitable[None]]
Woken = Callable[[str], Awaitable[None]]


class Leases:
    """Renews, takes over and releases the leases of one process (see the module docstring)."""

    def __init__(
        self,
        store: JobLeasing,
        platforms: Callable[[], Iterable[str]],
        take_over: TakeOver,
        woken: Woken,
        *,
        shards: Callable[[], str | None] = lambda: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._platforms = platforms
        self._take_over = take_over
        self._woken = woken
        self._shards = shards
        self._started_at = clock()
        self._tasks: list[asyncio.Task[None]] = []
        self.held = 0
        """Leases this process held at its last heartbeat (with what it took over then)."""
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
        """Renew this process's leases, then take over what no live process holds (with
        ``take_live``: everything another process holds, for SQLite's restart); how many
        jobs were taken over."""
        held = await self._store.heartbeat(self.process_info())
        platforms = list(self._platforms())
        taken = 0
        while platforms:
            jobs = await self._store.claim_jobs(platforms, limit=CLAIM_BATCH, take_live=take_live)
            if jobs:
                taken += len(jobs)
                await self._take_over(jobs)
            if len(jobs) < CLAIM_BATCH:
                break
        if taken:
            log.info("took over %d jobs no live process held", taken)
            metrics.jobs_taken_over(taken)
        self.taken_over += taken
        self.held = held + taken
        metrics.set_leases(self.held)
        return taken

    def start(self) -> None:
        """Start the heartbeat, and the wakeup listener on a shared database."""
        self._tasks.append(asyncio.create_task(self._beating(), name="genbot-leases"))
        if self._store.shared:
            self._tasks.append(asyncio.create_task(self._listening(), name="genbot-wakeups"))

    async def stop(self) -> None:
        """Stop the heartbeat and the listener (the leases stay until released or expired)."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

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
        period = self._store.lease_seconds / BEATS_PER_LEASE
        while True:
            await asyncio.sleep(period)
            try:
                async with asyncio.timeout(self._store.lease_seconds):
                    await self.beat()
            except (StorageError, TimeoutError) as error:
                log.warning("job lease heartbeat failed: %s", error)
            except Exception:
                log.exception("job lease heartbeat failed")

    async def _listening(self) -> None:
        while True:
            try:
                async for job_id in self._store.wakeups():
                    with contextlib.suppress(StorageError):
                        await self._woken(job_id)
            except StorageError as error:
                log.warning("listening for job wakeups failed: %s; retrying", error)
            await asyncio.sleep(WAKEUP_RETRY_SECONDS)
