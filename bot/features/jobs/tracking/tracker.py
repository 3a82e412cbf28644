"""The tracker: one per process, it follows every unfinished job until its result is posted.

**Leases** (:mod:`bot.features.jobs.tracking.leases`). Each process follows only the jobs it holds a
lease on: the ones it created and the ones it took over. A heartbeat renews its lease every quarter
lease and takes over jobs no live process holds (on the platforms this process has an adapter for).
A job taken over is settled first: claims left by the dead process are released (``posting →
finished``, ``reporting → failed``) so their delivery runs again. A ``creating`` job without a
linked progress message never reached the provider (the create call comes after the link, and
the link is fenced: a start whose job was taken over meanwhile sends nothing): it
becomes ``create_failed``, and its progress message, when the process died between posting and
linking it and the platform can find it by its key, says so. One with a progress message may have
reached it: it becomes ``unknown`` (never created again; a webhook may adopt it; it times out like
any other job). On SQLite (one process at a time) a start takes every lease at once; on
PostgreSQL it never takes a live one. A clean stop releases this process's leases.

**Webhooks** (when ``[webhook] public_url`` is set): the receiver hands valid notifications to
:meth:`Tracker.on_webhook`. A notification is a signal
(:mod:`bot.features.jobs.tracking.notifications`): a record it carries of a task still in flight is
applied like a poll would (its time stored with the same write); otherwise — in particular a record
saying the task finished or failed, which is never posted on its word — the task is read with
multi_fetch at once (batched with the other notified tasks waiting to be read) and what the provider
answers is applied; that triggers delivery, and polling keeps its pace, since it is only the
backstop. Any process may receive a notification: for a job another process holds, an in-flight
record is stored and the owner woken (``NOTIFY``; else its next round sees it), and the owner reads
the task (for a job without a task id yet, the receiving process reads the one named, storing what
the provider answers). A notification carrying a record for an ``unknown`` job (the job id is in
its address, the secret matches) adopts it: the task the record names is read, and adopted only if
the provider answers for it (a null answer for it changes nothing: it is not counted towards a lost
task).

**Polling.** A ``cancelled`` job counts as in flight here (:data:`FOLLOWED`): the provider still
runs its task, so it is polled (and webhooked) like the others until the provider is done, and
then ends ``failed``, hidden, charged what the provider reported
(:meth:`ProviderState.finish`). Each round asks the store, about this process's jobs only, for
- jobs older than ``job_timeout_seconds`` (docs/provider.md#task-transitions) not yet done at
  the provider: in-flight ones are asked about once more (after a downtime longer than the
  timeout, what the provider finished meanwhile is posted), and those still unfinished fail as
  timed out; ``unknown`` ones (and ``creating`` ones this process is not starting that may have
  been sent) fail with a note that they may or may not have been charged; ``creating`` ones
  that were never sent become ``create_failed``;
- finished and failed jobs whose (next) delivery attempt is due, and delivers them;
- every ``SWEEP_SECONDS``, jobs stuck in an in-between state with no work under way here (a
  storage write that would have recorded a step failed): a ``posting`` / ``reporting`` claim no
  delivery of this process is working on is released with its next attempt backed off (the
  delivery retries' deadline then reports it as not posted), and a ``creating`` job older than
  ``CREATING_GRACE_SECONDS`` that this process is not starting is settled like one a dead
  process left;
- diffusion jobs in flight whose ``next_poll_at`` (from the provider's ``eta``) is due;
- family B jobs in flight, polled with ``multi_fetch`` (≤ 50 ids per call), listed in brief
  (:class:`storage.JobBrief`: a job's whole row is read only when its task moved) and polled
  together once listed, so the round's calls follow each other without waiting for a page's
  last call (its time is mostly waiting for answers, not work). While this
  process receives webhooks, a job that asked for one is only polled as a backstop (no retry
  or delivery is documented: docs/provider.md#webhook-delivery), at most every
  ``poll_interval_max`` seconds and not within ``poll_interval_max`` of a webhook; other jobs
  (and every job when webhooks are off) every round.

A round's ``multi_fetch`` calls are spread: when a key has more calls than go at once
(``MULTI_FETCH_CONCURRENCY``), they come evenly over :data:`SPREAD_SHARE` of
``poll_interval_min``, not all at the round's start, so whenever jobs finish (a thousand at
once, say), a call that sees some of them comes within about the interval ÷ the calls, and the
first result is posted that soon, not at the next round. Each job is still polled once a round.
The share is of the shortest interval, so every call starts within the interval the round asks
for. A kick during the round (:meth:`Tracker.kick`: a job submitted) does not hurry it: a busy
bot takes submissions every round, which would undo the spread; the next round starts as soon as
this one ends, so a new job's first poll waits at most the spread longer. Rounds with few calls
are not spread (they all go at once anyway).

The interval runs from one round's start to the next, so a long round does not stretch it, and
a round that fails on storage is one line of the process's outage log (:mod:`bot.kernel.outage`) and
the next waits ``poll_interval_max``. It adapts: it drops to ``poll_interval_min`` when a round
saw a change or a job was submitted
(:meth:`Tracker.kick`, even during a round) and grows ×2 per quiet round that polled something,
up to ``poll_interval_max`` but never past :data:`AGE_SHARE` of the age of the youngest job the
round polled with multi_fetch: a job's finish is known within ``poll_interval_min`` or a twentieth
of its age, whichever is longer (jobs created together finish together: a quiet second while they
were a few seconds old doubled the wait before any of them was seen finished). With nothing to
poll the tracker sleeps ``poll_interval_max`` until woken. It also wakes for the earliest due
diffusion fetch or delivery retry, and when the oldest unfinished job reaches
``job_timeout_seconds``. A round after one that found nothing to do (nothing polled, changed,
kicked or due), unless kicked since, first asks whether this process holds any unfinished job
(every listing of a round is of its own jobs), and ends there when it holds none: an idle
process's round is one statement, not its six to eight listings.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Container, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from bot.api import ProviderClient, TaskRecord
from bot.features.jobs import wording
from bot.features.jobs.messages import JobMessages
from bot.features.jobs.starter import CREATING_GRACE_SECONDS
from bot.features.jobs.tracking.delivery_slots import DeliverySlots
from bot.features.jobs.tracking.leases import Leases
from bot.features.jobs.tracking.notifications import (
    Notification,
    NotJson,
    UseRecord,
    read_notification,
    task_id_of,
)
from bot.features.jobs.tracking.provider_state import (
    ProviderState,
    ProviderStateStorage,
    ScreensResults,
)
from bot.features.jobs.tracking.watch import JobWatch
from bot.features.jobs.webhook_secrets import WebhookSecrets
from bot.kernel import OUTAGE, LimitsSettings, metrics
from storage import (
    ACTIVE_STATUSES,
    IN_FLIGHT_STATUSES,
    JOB_ID_MAX,
    Job,
    JobBrief,
    JobChannel,
    JobLeasing,
    JobStatus,
    JobTracking,
    JobWriter,
    StorageError,
)

log = logging.getLogger(__name__)

DELIVERY_CONCURRENCY = 64
"""Deliveries under way at once. What they hold in memory, their images, is bounded in bytes
(:mod:`bot.features.jobs.held_images`), so this can let a burst keep every channel's next results
waiting at its write window."""
STOP_TIMEOUT = 5.0
PAGE_SIZE = 500
_JOB_ID = re.compile(rf"[A-Za-z0-9_-]{{1,{JOB_ID_MAX}}}")
MAX_TASK_ID = 128
_DELIVERABLE: frozenset[JobStatus] = frozenset(("finished", "failed"))
_CLAIMED: frozenset[JobStatus] = frozenset(("posting", "reporting"))
SWEEP_SECONDS = 5.0
"""How often the tracker looks for its jobs stuck in an in-between state."""
AGE_SHARE = 0.05
"""A quiet round grows the poll interval to at most this share of the youngest polled job's age
(never under ``poll_interval_min``): how late, relative to its age, a job's finish may be known."""
SPREAD_SHARE = 0.8
"""A round's multi_fetch calls, when there are more than go at once, come evenly over this share
of ``poll_interval_min`` (the shortest interval a round asks for), not all at its start."""
FOLLOWED: frozenset[JobStatus] = IN_FLIGHT_STATUSES | {"cancelled"}
"""What the tracker polls: the jobs in flight at the provider, and the cancelled ones whose task
still runs there (followed at the same pace: they share the polls' calls)."""
_SCHEDULED: frozenset[JobStatus] = FOLLOWED | _DELIVERABLE
Listed = TypeVar("Listed", Job, JobBrief)


DeliveryChannel = tuple[str, str, str]
"""The channel a result is posted in, as the delivery slots are shared: platform, workspace,
channel (a thread's is its parent's: they share write windows)."""


def channel_of(job: Job | JobChannel) -> DeliveryChannel:
    """The channel ``job``'s result is posted in."""
    return (job.platform, job.workspace_id, job.channel_id)


@dataclass(frozen=True)
class TrackerStorage:
    """What the tracker uses: job reads and moves, the tracking queries and job leases."""

    jobs: JobWriter
    tracking: JobTracking
    leasing: JobLeasing


class Tracker:
    """Polls, receives webhooks, resumes after restarts and triggers delivery. ``clock`` is
    the store's (``store.clock``), on which stored times are stamped and compared; it has no
    default, so a caller cannot fall back on this host's wall clock by leaving it out."""

    def __init__(
        self,
        store: TrackerStorage,
        provider: ProviderClient,
        delivery: JobMessages,
        watch: JobWatch,
        limits: LimitsSettings,
        webhook_secrets: WebhookSecrets,
        *,
        platforms: Callable[[], Iterable[str]],
        shards: Callable[[], str | None] = lambda: None,
        webhooks: bool = False,
        clock: Callable[[], float],
        monotonic: Callable[[], float] = time.monotonic,
        starting: Container[str],
        results: ScreensResults | None = None,
    ) -> None:
        self._store = store
        self._starting = starting
        """The jobs this process is starting right now (the starter's set): their ``creating``
        rows are not stranded."""
        self._owner = store.leasing.owner.process_id
        self.leases = Leases(
            store.leasing,
            platforms,
            self._take_over,
            self._woken,
            held=self._keep_only,
            shards=shards,
            clock=clock,
            monotonic=monotonic,
        )
        self.webhooks = webhooks
        self._secrets = webhook_secrets
        self.state = ProviderState(
            ProviderStateStorage(store.jobs, store.tracking),
            provider,
            delivery,
            watch,
            limits,
            on_done=lambda job: self.schedule_delivery(job.id, channel_of(job)),
            clock=clock,
            monotonic=monotonic,
            starting=starting,
            results=results,
        )
        self._delivery = delivery
        self._watch = watch
        self._limits = limits
        self._clock = clock
        self._monotonic = monotonic
        self.interval = limits.poll_interval_min
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._deliveries: dict[str, asyncio.Task[None]] = {}
        self._delivering_since: dict[str, int] = {}
        """When each delivery started, as the number of heartbeats asked by then."""
        self._fetches: set[asyncio.Task[None]] = set()
        self._to_fetch: dict[str, tuple[Job, str | None]] = {}
        """Jobs whose task is to be read at once (:meth:`_fetch_soon`), with a task id claimed."""
        self._fetching: asyncio.Task[None] | None = None
        self._delivery_slots = DeliverySlots(DELIVERY_CONCURRENCY)
        self._stopped = False
        self._kicked = False
        self._quiet = False
        """The last round found nothing to do (see the module docstring)."""
        self._next_sweep = -math.inf
        """When the next sweep is due, on the monotonic clock."""
        self._submitted_after: int | None = None
        """When a job was last submitted here, as the number of heartbeats asked by then."""
        self.rounds = 0

    # Lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Check that the unfinished jobs' webhook secrets open (with webhooks on:
        :class:`bot.kernel.SealError` otherwise), take over what no live process holds (on
        SQLite: everything a previous process left), then start polling and renewing
        leases."""
        self._stopped = False
        if self.webhooks:
            await self._secrets.check()
        await self.resume()
        self.leases.start()
        self._loop = asyncio.create_task(self._run(), name="genbot-tracker")

    async def stop(self) -> None:
        """:meth:`drain` for up to ``STOP_TIMEOUT`` seconds."""
        await self.drain(STOP_TIMEOUT)

    async def drain(self, timeout: float) -> None:
        """Stop polling and starting deliveries, let deliveries in progress finish (up to
        ``timeout`` seconds) so no result is left posted but unrecorded, then cancel what
        remains (its claim is released by the next owner), and release this process's leases
        so another process takes its jobs over at once. Runs again, releasing again, when
        :meth:`stop` follows a drain: a stop drains before its adapters stop and stops the
        tracker after them, and only that second release ends the leases of jobs created in
        between and drops a ``processes`` row written back in between
        (:meth:`storage.JobLeasing.release_leases`; tests/genbot/test_runtime.py holds it)."""
        self._stopped = True
        await self.leases.stop()
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)
            self._loop = None
        for fetch in list(self._fetches):
            fetch.cancel()
        await asyncio.gather(*self._fetches, return_exceptions=True)
        await self.state.progress_idle(cancel=True)
        deliveries = list(self._deliveries.values())
        if deliveries:
            _, unfinished = await asyncio.wait(deliveries, timeout=timeout)
            for task in unfinished:
                task.cancel()
            await asyncio.gather(*unfinished, return_exceptions=True)
            if unfinished:
                log.warning(
                    "%d result deliveries still running after %.0f s: cancelled, they run "
                    "again at the next start",
                    len(unfinished),
                    timeout,
                )
        self._deliveries.clear()
        await self.leases.release()

    def kick(self) -> None:
        """Poll soon: something was submitted or changed (a kick during a round makes the
        next round start at once, at the shortest interval)."""
        self.interval = self._limits.poll_interval_min
        self._kicked = True
        self._wake.set()

    def submitted(self, job_id: str) -> None:
        """A job was just handed to the provider (or finished at once)."""
        self._submitted_after = self.leases.asked
        self._watch.touch(job_id)
        self.schedule_delivery(job_id)
        self.kick()

    async def resume(self) -> None:
        """Take over the jobs no live process holds and settle them (jobs this process
        created — adapters take events before the tracker starts — are already its own)."""
        await self.leases.beat(take_live=not self._store.leasing.shared)

    async def _take_over(self, jobs: list[Job]) -> None:
        """Settle jobs taken over from a process that died: release its delivery claims and
        decide what its unconfirmed creations became; the next round does the rest."""
        for job in jobs:
            if job.status == "posting":
                await self._store.jobs.transition(job.id, "posting", "finished", fence=job.lease)
            elif job.status == "reporting":
                await self._store.jobs.transition(job.id, "reporting", "failed", fence=job.lease)
            elif job.status == "creating":
                job = await self._settle_creating(
                    job, wording.RESTARTED_BEFORE_SUBMIT, wording.RESTARTED_WHILE_CREATING
                )
            await self._delivery.marks.show_press_of(job)
        if jobs:
            self.kick()

    async def _settle_creating(self, job: Job, not_sent: str, maybe_sent: str) -> Job:
        """A ``creating`` job nobody is starting: never sent (no linked progress message, see
        the module docstring) → ``create_failed``; maybe sent → ``unknown``. The job after."""
        if job.progress_message_id is None:
            return await self._delivery.mark_not_started(job, not_sent)
        return await self._delivery.mark_unconfirmed(job, maybe_sent)

    async def _woken(self, job_id: str) -> None:
        """Another process learnt something about a job this one holds: act on it now."""
        job = await self._store.jobs.get_job(job_id)
        if job is None or job.owner != self._owner:
            return
        if job.status in _DELIVERABLE:
            self.schedule_delivery(job.id, channel_of(job))
        elif job.status in ACTIVE_STATUSES:
            self._fetch_soon(job)

    # Webhooks ---------------------------------------------------------------------------------

    async def webhook_job(self, job_id: str, secret: str | None) -> Job | None:
        """The job a webhook notification addressed to ``job_id`` is for, when ``secret`` is
        that job's webhook secret; None for an unknown job, a job without a webhook, or a
        missing or wrong secret (the same answer for all, compared in constant time). The
        receiver asks this before it reads the notification's body."""
        job = await self._store.jobs.get_job(job_id) if _JOB_ID.fullmatch(job_id) else None
        return job if await self._secrets.matches(job, secret) else None

    async def webhook_task_job(self, body: bytes, secret: str | None) -> Job | None:
        """The job of a notification that reached genbot's bare address, by the task id its
        ``body`` names (:func:`bot.features.jobs.tracking.notifications.task_id_of`), when
        ``secret`` is that job's webhook secret; None otherwise (also for a job whose task id is not
        stored yet: the backstop poll reads it)."""
        task_id = task_id_of(body)
        if not task_id or len(task_id) > MAX_TASK_ID:
            return None
        job = await self._store.jobs.job_for_task(task_id)
        return job if await self._secrets.matches(job, secret) else None

    async def on_webhook(self, job: Job, body: bytes) -> int:
        """Act on a notification for ``job`` (authenticated by :meth:`webhook_job`; what it
        means: :func:`bot.features.jobs.tracking.notifications.read_notification`) and return the
        HTTP status to answer: 400 for a body that is not JSON; else 200 — the in-flight record
        it carries is applied, or the task is read with multi_fetch at once (in the background);
        nothing changes when the job is already past the provider's part."""
        try:
            notice = read_notification(body, job.provider_id)
        except NotJson:
            return 400
        if job.status not in ACTIVE_STATUSES:
            return 200
        if job.owner is not None and job.owner != self._owner and self._store.leasing.shared:
            return await self._for_owner(job, notice)
        if isinstance(notice, UseRecord):
            await self.apply_task_record(job, notice.record, webhook_at=self._clock())
        else:
            await self._store.jobs.update_job(job.id, last_webhook_at=self._clock())
            self._fetch_soon(job, notice.task_id)
        return 200

    async def _for_owner(self, job: Job, notice: Notification) -> int:
        """A notification for a job another process holds: store what it says, wake the
        owner (its next round would see it too), which reads the task. A job without a task
        id yet has the task the notification names read here, and adopted as the provider
        answers (the owner could not know which task to read)."""
        webhook_at = self._clock()
        if isinstance(notice, UseRecord):
            await self.apply_task_record(job, notice.record, webhook_at=webhook_at, owned=False)
        else:
            await self._store.jobs.update_job(job.id, last_webhook_at=webhook_at)
            if job.provider_id is None and notice.task_id is not None:
                claimed = {job.id: notice.task_id}
                await self.state.poll_tasks([job], mark_polled=False, claimed=claimed, owned=False)
        await self._store.leasing.wake_owner(job)
        return 200

    def _fetch_soon(self, job: Job, claimed: str | None = None) -> None:
        """Read ``job``'s task now, in the background, with the other jobs waiting for such a
        read (one multi_fetch for up to 50 of a key's tasks: a burst of notifications is a few
        calls, not one each). ``claimed``: for a job without a task id yet, the task a
        notification named (read, and adopted only as the provider answers for it); without
        either, the next poll round."""
        if (job.provider_id is None and claimed is None) or self._stopped:
            self.kick()
            return
        self._to_fetch[job.id] = (job, claimed)
        if self._fetching is None or self._fetching.done():
            self._fetching = asyncio.create_task(self._fetch_waiting(), name="genbot-fetch")
            self._fetches.add(self._fetching)
            self._fetching.add_done_callback(self._fetches.discard)

    async def _fetch_waiting(self) -> None:
        """Read the tasks :meth:`_fetch_soon` queued, all at once, until none waits."""
        while self._to_fetch:
            waiting, self._to_fetch = self._to_fetch, {}
            claimed = {
                job_id: task_id
                for job_id, (job, task_id) in waiting.items()
                if job.provider_id is None and task_id is not None
            }
            jobs = [job for job, _ in waiting.values()]
            try:
                await self.state.poll_tasks(jobs, mark_polled=self.webhooks, claimed=claimed)
            except StorageError as error:
                OUTAGE.failed("reading notified tasks", error)

    async def apply_task_record(
        self,
        job: Job,
        record: TaskRecord,
        *,
        webhook_at: float | None = None,
        owned: bool = True,
    ) -> bool:
        """Mirror a family B record into the job (:meth:`ProviderState.apply_task_record`)."""
        return await self.state.apply_task_record(job, record, webhook_at=webhook_at, owned=owned)

    def schedule_delivery(self, job_id: str, channel: DeliveryChannel | None = None) -> None:
        """Deliver ``job_id`` in the background (once at a time per job), in a slot taken
        fairly among ``channel`` and the other channels results wait for (see
        :mod:`~bot.features.jobs.tracking.delivery_slots`; ``None``: not known here)."""
        running = self._deliveries.get(job_id)
        if self._stopped or (running is not None and not running.done()):
            return
        delivery = self._deliver(job_id, channel)
        task = asyncio.create_task(delivery, name=f"genbot-deliver-{job_id}")
        self._deliveries[job_id] = task
        self._delivering_since[job_id] = self.leases.asked
        task.add_done_callback(lambda _: self._forget(job_id, task))

    def _forget(self, job_id: str, task: asyncio.Task[None]) -> None:
        if self._deliveries.get(job_id) is task:
            del self._deliveries[job_id]
            self._delivering_since.pop(job_id, None)

    def _keep_only(self, held: frozenset[str], beat: int) -> None:
        """Stop delivering the jobs this process no longer holds (taken over while it
        stalled), as heartbeat number ``beat`` counted them: a delivery started once that
        heartbeat had asked is newer than what ``held`` knows. A delivery recording its
        outcome is not stopped: the job left ``held`` by its own move."""
        for job_id, task in list(self._deliveries.items()):
            started = self._delivering_since.get(job_id, beat)
            gone = job_id not in held and job_id not in self._delivery.recording
            if gone and started < beat and not task.done():
                log.info("job %s was taken over by another process; stopped delivering it", job_id)
                task.cancel()

    @property
    def holds_jobs(self) -> bool:
        """Whether this process may hold an unfinished job, as far as it knows without asking
        the database: it held one at its last heartbeat (with what that took over), a job was
        submitted here since that heartbeat asked, or no heartbeat has answered yet. False
        only when it certainly holds none (a job it creates is in flight only once submitted;
        one it takes over comes with a heartbeat)."""
        beat, submitted = self.leases.held_beat, self._submitted_after
        if beat is None or self.leases.held > 0:
            return True
        return submitted is not None and submitted >= beat

    @property
    def deliveries_waiting(self) -> bool:
        """Whether deliveries are waiting for one of the ``DELIVERY_CONCURRENCY`` slots (a
        burst of results: the progress ticker leaves them the event loop and storage)."""
        return self._delivery_slots.waiting > 0

    async def _deliver(self, job_id: str, channel: DeliveryChannel | None) -> None:
        metrics.LOG_JOB_ID.set(job_id)
        try:
            async with self._delivery_slots.slot(channel):
                retry_at = await self._delivery.deliver(job_id)
        except StorageError as error:
            OUTAGE.failed("result delivery", error)
            return
        except Exception:
            log.exception("delivering job %s failed", job_id)
            return
        if retry_at is not None:
            self._wake.set()

    async def wait_idle(self) -> None:
        """Wait until the fetches, progress edits and deliveries started so far are done
        (tests, shutdown)."""
        while self._deliveries or self._fetches or self.state.busy:
            await asyncio.gather(*self._fetches, return_exceptions=True)
            await self.state.progress_idle()
            await asyncio.gather(*list(self._deliveries.values()), return_exceptions=True)

    # Polling ----------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            started = self._monotonic()
            sleep = self._limits.poll_interval_max
            try:
                sleep = await self.poll_round()
            except StorageError as error:
                OUTAGE.failed("tracker round", error)
                self.interval = self._limits.poll_interval_max
            except Exception:
                log.exception("tracker round failed")
                self.interval = self._limits.poll_interval_max
            else:
                OUTAGE.succeeded()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.wait_after(started, sleep)):
                    await self._wake.wait()

    def wait_after(self, started: float, sleep: float) -> float:
        """How long to wait after a round that began at ``started`` (on the monotonic clock: a
        wall clock stepped back would stretch the wait by the step) and asked for ``sleep``
        seconds: the interval runs from the round's start, so a round that took long (a
        thousand jobs to poll and apply) does not stretch it."""
        return max(sleep - (self._monotonic() - started), 0.0)

    async def poll_round(self) -> float:
        """One round (see the module docstring); returns the seconds until the next one."""
        self.rounds += 1
        kicked, self._kicked = self._kicked, False
        if self._quiet and not kicked and not await self._store.tracking.holds_jobs(self._owner):
            return self.interval
        now = self._clock()
        changed = polled = False
        stale = now - self._limits.job_timeout_seconds
        async for jobs in self._pages(ACTIVE_STATUSES, created_before=stale):
            changed |= await self._last_look(jobs)
            for job in jobs:
                changed |= await self.state.time_out(job)
        if (moment := self._monotonic()) >= self._next_sweep:
            self._next_sweep = moment + SWEEP_SECONDS
            changed |= await self._sweep_stranded(now)
        for waiting in await self._store.tracking.unfinished_job_channels(
            _DELIVERABLE, due_at=now, owner=self._owner
        ):
            self.schedule_delivery(waiting.id, channel_of(waiting))
        async for jobs in self._pages(FOLLOWED, family="diffusion", due_at=now):
            polled |= bool(jobs)
            changed |= await self.state.poll_diffusion(jobs, self.interval)
        quiet = now - self._limits.poll_interval_max if self.webhooks else None
        briefs_in_flight = self._paged(
            self._store.tracking.list_job_briefs,
            FOLLOWED,
            family="task",
            webhook_quiet_since=quiet,
        )
        due = [
            brief async for page in briefs_in_flight for brief in page if self._task_due(brief, now)
        ]
        polled |= bool(due)
        changed |= await self.state.poll_tasks(
            due,
            mark_polled=self.webhooks,
            spread=SPREAD_SHARE * self._limits.poll_interval_min,
        )
        youngest = max((brief.created_at for brief in due), default=None)
        return await self._next_sleep(changed, polled, now, youngest)

    async def _last_look(self, jobs: list[Job]) -> bool:
        """Ask the provider once about in-flight ``jobs`` past the job timeout before they time
        out: after a downtime longer than the timeout, a task it finished meanwhile is posted
        (a job that moves here is left alone by :meth:`ProviderState.time_out`'s transition)."""
        in_flight = [job for job in jobs if job.status in FOLLOWED and job.provider_id]
        tasks = [job for job in in_flight if job.family == "task"]
        diffusions = [job for job in in_flight if job.family == "diffusion"]
        polled = await self.state.poll_tasks(tasks, mark_polled=self.webhooks)
        return await self.state.poll_diffusion(diffusions, self.interval) or polled

    async def _sweep_stranded(self, now: float) -> bool:
        """Move on this process's jobs stuck in an in-between state with no work under way
        here (a write that recorded a step failed, so nothing else would): a delivery claim
        nobody is delivering is released (its next attempt backed off, or given up once the
        delivery retries are used up), and a ``creating`` job nobody is starting is settled
        like one a dead process left (never created again). True if any job moved."""
        moved = False
        async for jobs in self._pages(_CLAIMED):
            for job in jobs:
                if job.id not in self._deliveries:
                    moved |= await self._delivery.release_stranded(job)
        async for jobs in self._pages(("creating",), created_before=now - CREATING_GRACE_SECONDS):
            for job in jobs:
                if job.id not in self._starting:
                    lost = (wording.LOST_BEFORE_SUBMIT, wording.LOST_WHILE_SENDING)
                    await self._settle_creating(job, *lost)
                    moved = True
        return moved

    def _pages(self, statuses: Iterable[JobStatus], **filters: Any) -> AsyncIterator[list[Job]]:
        return self._paged(self._store.tracking.list_unfinished_jobs, statuses, **filters)

    async def _paged(
        self,
        read: Callable[..., Awaitable[list[Listed]]],
        statuses: Iterable[JobStatus],
        **filters: Any,
    ) -> AsyncIterator[list[Listed]]:
        """This process's jobs in ``statuses`` as ``read`` lists them, a page at a time."""
        after: Listed | None = None
        while True:
            page = await read(statuses, limit=PAGE_SIZE, after=after, owner=self._owner, **filters)
            if page:
                yield page
            if len(page) < PAGE_SIZE:
                return
            after = page[-1]

    async def _next_sleep(
        self, changed: bool, polled: bool, now: float, youngest: float | None
    ) -> float:
        wake_at = [await self._store.tracking.next_poll_after(_SCHEDULED, now, owner=self._owner)]
        oldest = await self._store.tracking.list_job_briefs(
            ACTIVE_STATUSES, limit=1, owner=self._owner
        )
        if oldest:
            wake_at.append(oldest[0].created_at + self._limits.job_timeout_seconds)
        low, high = self._limits.poll_interval_min, self._limits.poll_interval_max
        if changed or self._kicked:
            self.interval = low
        elif polled:
            self.interval = min(high, self.interval * 2, self._grown_at_most(now, youngest))
        else:
            self.interval = high
        due = [at for at in wake_at if at is not None]
        self._quiet = not (changed or polled or self._kicked or due)
        if due:
            return max(low, min(self.interval, min(due) - now))
        return self.interval

    def _grown_at_most(self, now: float, youngest: float | None) -> float:
        """The longest interval a quiet round may grow to, given the creation time of the
        youngest job it polled with multi_fetch (None: it polled none)."""
        if youngest is None:
            return self._limits.poll_interval_max
        return max(self._limits.poll_interval_min, (now - youngest) * AGE_SHARE)

    def _task_due(self, job: JobBrief, now: float) -> bool:
        if job.provider_id is None:
            return False
        if not (self.webhooks and job.webhook):
            return True
        last = job.last_polled_at or job.created_at
        return now - last >= self._limits.poll_interval_max
