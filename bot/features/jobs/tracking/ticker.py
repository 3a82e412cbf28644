"""The progress ticker: keeps every running job's progress message moving.

Every :data:`TICK_SECONDS`, while this process may hold an unfinished job (as its tracker knows
from its heartbeat and its submissions, without a statement, or it is sending one; an idle
process's tick sends none and forgets the places), it lists the jobs in flight or being sent
(:data:`TICKED_STATUSES`, a few columns of each), works out each
one's place among its requester's running jobs (those of every process), and asks delivery to show
the progress of the jobs this process holds the lease on (:mod:`bot.features.jobs.tracking.leases`),
read whole in one statement: with several processes on one database, each job's message is ticked
by one process, its owner, and only its owner reads the job's row. The edits under way at once
(:data:`CONCURRENCY`) are the cluster's: each process takes its share, in proportion to the jobs it
holds, so N processes edit about as much as one instead of N times as much into the same write
windows. JobMessages edits a message only when its text changed (the elapsed time moves in 5-second
steps) and only when it finds room within its wait (:data:`WAIT_SHARE` of a tick) with a quarter
of each write window left free (``PROGRESS_SPARE``), so results and chat answers find room beside
it. Nor does it on the event loop and in storage: while deliveries wait for a
slot (a burst of results), a tick edits nothing more (the next one shows the time then).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Callable

from bot.features.jobs.messages import JobMessages
from bot.features.jobs.wording import Position
from bot.kernel import OUTAGE
from storage import IN_FLIGHT_STATUSES, JobStatus, JobTracking, RunningJob, StorageError

log = logging.getLogger(__name__)

TICK_SECONDS = 5.0
TICKED_STATUSES: frozenset[JobStatus] = IN_FLIGHT_STATUSES | {"creating"}
"""The jobs whose progress ticks: in flight, and being sent (Sending) until the provider answers."""
MAX_TICKED = 2000
"""At most this many jobs are ticked per round (the oldest first)."""
CONCURRENCY = 8
"""Progress edits under way at once across the processes (a few workers take the jobs in turn,
rather than a task per job created all at once; see :func:`workers`)."""
WAIT_SHARE = 0.8
"""A tick's edits wait for room at most this share of the tick (then the next tick brings a
newer text; least recently edited messages go first, after chat answers and results)."""


def positions(jobs: list[RunningJob]) -> dict[str, Position]:
    """Each job's place among the running jobs of its requester (``jobs`` oldest first)."""
    by_requester: dict[tuple[str, str], list[RunningJob]] = defaultdict(list)
    for job in jobs:
        by_requester[job.platform, job.requester_id].append(job)
    return {
        job.id: Position(index, len(mine))
        for mine in by_requester.values()
        for index, job in enumerate(mine, start=1)
    }


def workers(jobs: list[RunningJob], owner: str) -> int:
    """How many of the :data:`CONCURRENCY` workers process ``owner`` runs: its share of the
    ticked jobs (those with a progress message) on the platforms it holds jobs of, rounded down
    but at least one (all of them when it holds every such job, none when it holds none), so
    the processes together keep at most :data:`CONCURRENCY` edits under way (one each when
    there are more of them)."""
    ticked = [job for job in jobs if job.progress_message_id]
    platforms = {job.platform for job in ticked if job.owner == owner}
    mine = sum(job.owner == owner for job in ticked)
    beside = sum(job.platform in platforms for job in ticked)
    return max(CONCURRENCY * mine // beside, 1) if mine else 0


class ProgressTicker:
    """A service the core starts and stops (see the module docstring)."""

    def __init__(
        self,
        store: JobTracking,
        delivery: JobMessages,
        *,
        owner: str,
        every: float = TICK_SECONDS,
        deliveries_waiting: Callable[[], bool] = lambda: False,
        holds_jobs: Callable[[], bool] = lambda: True,
    ) -> None:
        self._store = store
        self._holds_jobs = holds_jobs
        self._owner = owner
        self._delivery = delivery
        self._deliveries_waiting = deliveries_waiting
        self.every = every
        delivery.progress_step = every
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="genbot-progress")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                await self.tick()
            except StorageError as error:
                OUTAGE.failed("progress tick", error)
            except Exception:
                log.exception("progress tick failed")

    async def tick(self) -> int:
        """One round (nothing while this process holds no unfinished job: see the module
        docstring); returns how many progress messages were edited."""
        if not self._holds_jobs():
            self._delivery.positions = {}
            return 0
        running = await self._store.list_running(TICKED_STATUSES, limit=MAX_TICKED)
        self._delivery.positions = positions(running)
        if self._deliveries_waiting():
            return 0
        mine = [job.id for job in running if job.owner == self._owner and job.progress_message_id]
        whole = await self._store.whole_jobs(mine)
        held = iter(
            [job for job in map(whole.get, mine) if job is not None and job.owner == self._owner]
        )

        async def worker() -> int:
            shown = 0
            for job in held:
                if self._deliveries_waiting():
                    break
                shown += await self._delivery.show_progress(job, wait=self.every * WAIT_SHARE)
            return shown

        working = workers(running, self._owner)
        return sum(await asyncio.gather(*(worker() for _ in range(working))))
