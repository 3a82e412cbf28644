"""The tracker: one per process, it follows every unfinished job until its result is posted.

**Start.** Claims left by a previous process are released (``posting → finished``,
``reporting → failed``) so their delivery runs again; ``creating`` jobs without a provider id
become ``create_failed`` with a note (they may or may not have reached the provider: creating
them again could charge twice, so the user is asked to press again); everything in flight is
polled and everything finished or failed is delivered.

**Webhooks** (when ``[webhook] public_url`` is set): the receiver hands valid notifications to
:meth:`Tracker.on_webhook`, which applies the record like a poll would and triggers delivery.

**Polling.** Each round reads the unfinished jobs and
- fails in-flight jobs older than ``job_timeout_seconds``;
- polls family B jobs with ``multi_fetch`` (≤ 50 ids per call). While this process receives
  webhooks, a job that asked for one is only polled as a backstop, at most every
  ``poll_interval_max`` seconds and not within ``poll_interval_max`` of a webhook; other jobs
  (and every job when webhooks are off) every round;
- fetches diffusion jobs once their ``next_poll_at`` (from the provider's ``eta``) is due;
- delivers finished and failed jobs.

The interval between rounds adapts: it drops to ``poll_interval_min`` when a round saw a change
(or a new job was submitted) and grows ×2 per quiet round up to ``poll_interval_max``; with no
job in flight the tracker sleeps ``poll_interval_max`` until woken by a new job. It also wakes
for the earliest due diffusion fetch.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from bot.api import ApiError, DiffusionFailed, DiffusionResponse, ProviderClient, TaskRecord
from bot.api.models_common import read_model
from bot.config import LimitsSettings
from bot.jobs import texts
from bot.jobs.delivery import Delivery
from bot.jobs.watch import JobWatch
from storage import (
    ACTIVE_STATUSES,
    IN_FLIGHT_STATUSES,
    JOB_ID_MAX,
    Job,
    JobStatus,
    Store,
)

log = logging.getLogger(__name__)

DELIVERY_CONCURRENCY = 4
DIFFUSION_FETCH_CONCURRENCY = 4
STOP_TIMEOUT = 5.0
_JOB_ID = re.compile(rf"[A-Za-z0-9_-]{{1,{JOB_ID_MAX}}}")
_MIRRORED: dict[str, JobStatus] = {
    "pending": "pending",
    "staged": "staged",
    "processing": "processing",
    "retry": "retry",
}


def task_result_fields(record: TaskRecord) -> dict[str, Any]:
    """What a finished family B record leaves in the job row."""
    result = record.task_result
    urls = [result.image_url, result.permanent_url, result.host_url]
    return {
        "result_urls": list(dict.fromkeys(url for url in urls if url)),
        "actions": list(result.actions),
        "credits": result.credit,
        "result": {
            "seed": result.seed,
            "prompts": result.describe_prompts(),
            "process_time": record.process_time,
            "image_id": result.image_id,
        },
    }


def diffusion_result_fields(answer: DiffusionResponse) -> dict[str, Any]:
    """What a ready diffusion answer leaves in the job row."""
    meta = answer.meta.model_dump(exclude_none=True) if answer.meta is not None else {}
    return {"result_urls": list(answer.output), "result": {"meta": meta}}


class Tracker:
    """Polls, receives webhooks, resumes after restarts and triggers delivery."""

    def __init__(
        self,
        store: Store,
        provider: ProviderClient,
        delivery: Delivery,
        watch: JobWatch,
        limits: LimitsSettings,
        *,
        webhooks: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self.webhooks = webhooks
        self._provider = provider
        self._delivery = delivery
        self._watch = watch
        self._limits = limits
        self._clock = clock
        self.interval = limits.poll_interval_min
        self._wake = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._deliveries: dict[str, asyncio.Task[None]] = {}
        self._delivery_slots = asyncio.Semaphore(DELIVERY_CONCURRENCY)
        self._stopped = False
        self.rounds = 0

    # Lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Resume what a previous process left, then start polling."""
        self._stopped = False
        await self.resume()
        self._loop = asyncio.create_task(self._run(), name="genbot-tracker")

    async def stop(self) -> None:
        """Stop polling, let deliveries in progress finish (up to ``STOP_TIMEOUT``) so no
        result is left posted but unrecorded, then cancel what remains (its claim is released
        by the next start)."""
        self._stopped = True
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)
            self._loop = None
        deliveries = list(self._deliveries.values())
        if deliveries:
            _, unfinished = await asyncio.wait(deliveries, timeout=STOP_TIMEOUT)
            for task in unfinished:
                task.cancel()
            await asyncio.gather(*unfinished, return_exceptions=True)
        self._deliveries.clear()

    def kick(self) -> None:
        """Poll soon: something was submitted or changed."""
        self.interval = self._limits.poll_interval_min
        self._wake.set()

    def submitted(self, job_id: str) -> None:
        """A job was just handed to the provider (or finished at once)."""
        self._watch.touch(job_id)
        self.schedule_delivery(job_id)
        self.kick()

    async def resume(self) -> None:
        """Release stale claims and settle jobs that never reached the provider."""
        for job in await self._store.list_unfinished_jobs(("creating", "posting", "reporting")):
            if job.status == "posting":
                await self._store.transition(job.id, "posting", "finished")
            elif job.status == "reporting":
                await self._store.transition(job.id, "reporting", "failed")
            elif job.provider_id is not None:
                await self._store.transition(job.id, "creating", "submitted")
            else:
                note = texts.RESTARTED_BEFORE_SUBMIT
                if await self._store.transition(job.id, "creating", "create_failed", error=note):
                    await self._delivery.edit(job, texts.create_failed_text(job, note), urgent=True)
                    self._delivery.forget(job.id)
                    self._watch.touch(job.id)

    # Webhooks ---------------------------------------------------------------------------------

    async def on_webhook(self, job_id: str, secret: str | None, body: bytes) -> int:
        """Apply a webhook notification for ``job_id``; returns the HTTP status to answer.

        401 for an unknown job, a job without a webhook, or a missing or wrong secret (the same
        answer for all, compared in constant time); 400 for a body that is not this job's task
        record; 200 (and nothing changes) when the job is already past the provider's part.
        """
        job = await self._store.get_job(job_id) if _JOB_ID.fullmatch(job_id) else None
        expected = job.webhook_secret if job is not None else None
        given = (secret or "").encode()
        if job is None or not expected or not hmac.compare_digest(given, expected.encode()):
            return 401
        try:
            record = read_model(TaskRecord, json.loads(body), "webhook")
        except (ValueError, ApiError):
            return 400
        if not record.task_id or (job.provider_id and record.task_id != job.provider_id):
            return 400
        if job.status not in ACTIVE_STATUSES:
            return 200
        await self._store.update_job(job.id, last_webhook_at=self._clock())
        await self.apply_task_record(job, record)
        self.kick()
        return 200

    # Applying provider state ------------------------------------------------------------------

    async def apply_task_record(self, job: Job, record: TaskRecord) -> bool:
        """Mirror a family B record into the job; True if the job changed."""
        status = record.status
        if status == "finished":
            fields = task_result_fields(record)
            if job.provider_id is None:
                fields["provider_id"] = record.task_id
            return await self._done(job, "finished", **fields)
        if status == "failed":
            errors = [m for m in record.task_result.error_messages if m.strip()]
            error = "\n".join(errors) or "The service reported a failure without details."
            extra = {"provider_id": record.task_id} if job.provider_id is None else {}
            return await self._done(job, "failed", error=error, **extra)
        mirrored = _MIRRORED.get(status)
        if mirrored is None:
            log.warning("job %s: unknown provider status %r", job.id, status)
            return False
        changed = False
        if mirrored != job.status and job.status in IN_FLIGHT_STATUSES:
            changed = await self._store.transition(job.id, IN_FLIGHT_STATUSES, mirrored)
        shown = await self._delivery.show_progress(job, status, record.process_time)
        return changed or shown

    async def _done(self, job: Job, status: JobStatus, **fields: Any) -> bool:
        moved = await self._store.transition(job.id, ACTIVE_STATUSES, status, **fields)
        if moved:
            if status == "finished" and fields.get("credits"):
                await self._store.add_usage(
                    job.platform,
                    job.requester_id,
                    credits=int(fields["credits"]),
                    kind="credits",
                    job_id=job.id,
                )
            self._watch.touch(job.id)
            self.schedule_delivery(job.id)
        return moved

    def schedule_delivery(self, job_id: str) -> None:
        """Deliver ``job_id`` in the background (once at a time per job)."""
        running = self._deliveries.get(job_id)
        if self._stopped or (running is not None and not running.done()):
            return
        task = asyncio.create_task(self._deliver(job_id), name=f"genbot-deliver-{job_id}")
        self._deliveries[job_id] = task
        task.add_done_callback(lambda _: self._forget(job_id, task))

    def _forget(self, job_id: str, task: asyncio.Task[None]) -> None:
        if self._deliveries.get(job_id) is task:
            del self._deliveries[job_id]

    async def _deliver(self, job_id: str) -> None:
        async with self._delivery_slots:
            try:
                await self._delivery.deliver(job_id)
            except Exception:
                log.exception("delivering job %s failed", job_id)

    async def wait_idle(self) -> None:
        """Wait until the deliveries started so far are done (tests, shutdown)."""
        while self._deliveries:
            await asyncio.gather(*list(self._deliveries.values()), return_exceptions=True)

    # Polling ----------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            sleep = self._limits.poll_interval_max
            try:
                sleep = await self.poll_round()
            except Exception:
                log.exception("tracker round failed")
                self.interval = self._limits.poll_interval_max
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(sleep, 0.0)):
                    await self._wake.wait()

    async def poll_round(self) -> float:
        """One round (see the module docstring); returns the seconds until the next one."""
        self.rounds += 1
        now = self._clock()
        jobs = await self._store.list_unfinished_jobs()
        timeout = self._limits.job_timeout_seconds
        changed = False
        in_flight: list[Job] = []
        for job in jobs:
            if job.status in ("finished", "failed"):
                self.schedule_delivery(job.id)
            elif job.status in IN_FLIGHT_STATUSES:
                if now - job.created_at > timeout:
                    changed |= await self._time_out(job)
                else:
                    in_flight.append(job)
        tasks = [j for j in in_flight if j.family == "task" and self._task_due(j, now)]
        diffusion = [j for j in in_flight if j.family == "diffusion"]
        due = [j for j in diffusion if j.next_poll_at is None or j.next_poll_at <= now]
        changed |= await self._poll_tasks(tasks)
        changed |= await self._poll_diffusion(due)
        return self._next_sleep(changed, bool(in_flight), diffusion, due, now)

    def _next_sleep(
        self, changed: bool, busy: bool, diffusion: list[Job], due: list[Job], now: float
    ) -> float:
        low, high = self._limits.poll_interval_min, self._limits.poll_interval_max
        if changed:
            self.interval = low
        elif busy:
            self.interval = min(high, self.interval * 2)
        else:
            self.interval = high
        waiting = [j.next_poll_at for j in diffusion if j not in due and j.next_poll_at is not None]
        if waiting:
            return max(low, min(self.interval, min(waiting) - now))
        return self.interval

    def _task_due(self, job: Job, now: float) -> bool:
        if job.provider_id is None:
            return False
        if not (self.webhooks and job.webhook_secret):
            return True
        backstop = self._limits.poll_interval_max
        last = job.last_polled_at or job.created_at
        heard = job.last_webhook_at
        return now - last >= backstop and (heard is None or now - heard >= backstop)

    async def _time_out(self, job: Job) -> bool:
        minutes = self._limits.job_timeout_seconds / 60
        error = f"The service did not finish this job within {minutes:g} minutes."
        return await self._done(
            job, "failed", error=error, result={**job.result, "timed_out": True}
        )

    async def _poll_tasks(self, jobs: list[Job]) -> bool:
        if not jobs:
            return False
        by_provider = {job.provider_id: job for job in jobs if job.provider_id}
        try:
            records = await self._provider.tasks.multi_fetch(by_provider)
        except ApiError as error:
            log.warning("multi_fetch of %d tasks failed: %s", len(by_provider), error)
            return False
        await self._store.mark_polled(job.id for job in jobs)
        results = await asyncio.gather(
            *(
                self.apply_task_record(by_provider[task_id], record)
                for task_id, record in records.items()
                if record is not None and task_id in by_provider
            )
        )
        return any(results)

    async def _poll_diffusion(self, jobs: Iterable[Job]) -> bool:
        slots = asyncio.Semaphore(DIFFUSION_FETCH_CONCURRENCY)

        async def one(job: Job) -> bool:
            async with slots:
                return await self._fetch_diffusion(job)

        return any(await asyncio.gather(*(one(job) for job in jobs)))

    async def _fetch_diffusion(self, job: Job) -> bool:
        assert job.provider_id is not None
        now = self._clock()
        try:
            answer = await self._provider.diffusion.fetch(int(job.provider_id))
        except DiffusionFailed as error:
            return await self._done(job, "failed", error=error.user_message)
        except ApiError as error:
            log.warning("diffusion fetch of job %s failed: %s", job.id, error)
            await self._store.update_job(job.id, next_poll_at=now + self._limits.poll_interval_max)
            return False
        if answer.is_ready:
            return await self._done(job, "finished", **diffusion_result_fields(answer))
        wait = answer.eta if answer.eta is not None and answer.eta > 0 else self.interval
        low, high = self._limits.poll_interval_min, self._limits.poll_interval_max
        await self._store.update_job(
            job.id, next_poll_at=now + min(max(wait, low), high), last_polled_at=now
        )
        changed = False
        if job.status != "processing":
            changed = await self._store.transition(job.id, IN_FLIGHT_STATUSES, "processing")
        shown = await self._delivery.show_progress(job, "processing", now - job.created_at)
        return changed or shown
