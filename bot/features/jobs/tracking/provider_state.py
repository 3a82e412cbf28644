"""Mirroring the provider's state into job rows: a family B task record (from a poll or a
webhook) or a diffusion fetch moves the job (adopting the provider's task id when it had none),
stores the result and shows progress; a job the provider is done with goes to delivery. Jobs
older than ``job_timeout_seconds`` are settled here too. The tracker
(:mod:`bot.features.jobs.tracking.tracker`) decides when; this module decides what changes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Protocol

from bot.api import (
    ANY_IN_FLIGHT,
    ApiError,
    DiffusionFailed,
    DiffusionResponse,
    MultiFetchPart,
    ProviderClient,
    TaskRecord,
)
from bot.features.jobs import wording
from bot.features.jobs.messages import JobMessages
from bot.features.jobs.params import job_language, result_with
from bot.features.jobs.tracking.moves import MoveBatch
from bot.features.jobs.tracking.watch import JobWatch
from bot.kernel import N_, LimitsSettings, _, format_number, provider_text, speaking
from storage import (
    ACTIVE_STATUSES,
    IN_FLIGHT_STATUSES,
    Job,
    JobBrief,
    JobStatus,
    JobTracking,
    JobWriter,
)

log = logging.getLogger(__name__)

DIFFUSION_FETCH_CONCURRENCY = 4
APPLY_AT_MOST = 20
"""multi_fetch answers applied together at most (1000 task ids: a statement's ids stay far
below the databases' limits on bound values)."""
PROGRESS_CONCURRENCY = 4
"""Progress edits a poll starts (for the jobs it moved) under way at once: each is a platform
write, and a thousand jobs moving in one answer must not take every storage connection."""
NOT_STARTED = N_("genbot could not start this job (nothing was sent to the service).")
LOST_AFTER_NULLS = 3
"""multi_fetch answers null for a task genbot created this many times in a row, at least
``poll_interval_max`` apart in all, before the task counts as lost (docs/provider.md#lost-tasks)."""
_LOST_TASK = N_(
    "The service no longer knows this job: it answered that its task does not exist "
    "{count} times in a row, so no result will come. Start it again."
)
LOST_TASK = _LOST_TASK.format(count=LOST_AFTER_NULLS)
"""The error of a lost task, in English (shown in the language spoken: ``_(_LOST_TASK…)``)."""
_MIRRORED: dict[str, JobStatus] = {
    "pending": "pending",
    "staged": "staged",
    "processing": "processing",
    "retry": "retry",
}
_ADOPTABLE: frozenset[JobStatus] = IN_FLIGHT_STATUSES | {"creating", "unknown"}
_QUEUED: frozenset[JobStatus] = frozenset(("submitted", "staged", "pending"))
FORWARD_FROM: dict[JobStatus, frozenset[JobStatus]] = {
    "staged": frozenset(("submitted", "staged")),
    "pending": _QUEUED,
    "processing": IN_FLIGHT_STATUSES,
    "retry": IN_FLIGHT_STATUSES,
}
"""The statuses in flight a job may move to each status in flight from (or stay in): a task
is cached (``staged``), queued (``pending``), then run (``processing``, and ``retry`` between
runs), so a record saying it is queued once it was seen cached or running is older than what
genbot showed (a late notification, an answer overtaken by a newer one) and moves nothing:
progress shown never goes back (docs/provider.md#task-transitions). A finished or failed
record always wins."""
_FOLLOWED_UNCANCELLED: frozenset[JobStatus] = ACTIVE_STATUSES - {"cancelled"}
CANCELLED_KEEPS = frozenset(("credits", "provider_id", "last_webhook_at", "finished_at"))
"""What the provider's end of a cancelled job's task leaves in its row: what it was charged and
what identifies the task, nothing shown."""


def _known_as(job: Job | JobBrief) -> str:
    """The provider status a poll learns nothing from for ``job``: a cancelled job's task
    is only followed to its end, so any status in flight."""
    return ANY_IN_FLIGHT if job.status == "cancelled" else job.status


def charged_credits(record: TaskRecord) -> int:
    """What the provider says a finished task cost: ``task_result.credit``, else (a record
    without it) ``meta.frozen_credit``, the credits it held for the task; 0 when it says
    neither (docs/provider.md#task-prices)."""
    if "credit" in record.task_result.model_fields_set:
        return record.task_result.credit
    return record.meta.frozen_credit


def task_result_fields(record: TaskRecord) -> dict[str, Any]:
    """What a finished family B record leaves in the job row."""
    result = record.task_result
    urls = [result.image_url, result.permanent_url, result.host_url]
    return {
        "result_urls": list(dict.fromkeys(url for url in urls if url)),
        "actions": list(result.actions),
        "credits": charged_credits(record),
        "result": {
            "seed": result.seed,
            "prompts": result.describe_prompts() if result.prompts or result.message else [],
            "process_time": record.process_time,
            "image_id": result.image_id,
            "mode": record.meta.process_mode,
        },
    }


def diffusion_result_fields(answer: DiffusionResponse) -> dict[str, Any]:
    """What a ready diffusion answer leaves in the job row."""
    meta = answer.meta.model_dump(exclude_none=True) if answer.meta is not None else {}
    return {"result_urls": list(answer.output), "result": {"meta": meta}}


def poll_delay(eta: float | None, limits: LimitsSettings, default: float) -> float:
    """Seconds until a diffusion job is fetched (again): the provider's ``eta`` (else
    ``default``), kept within ``[poll_interval_min, poll_interval_max]``."""
    wait = eta if eta is not None and eta > 0 else default
    return min(max(wait, limits.poll_interval_min), limits.poll_interval_max)


@dataclass(frozen=True)
class ProviderStateStorage:
    """What mirroring uses: job reads and moves, and the poll marks."""

    jobs: JobWriter
    tracking: JobTracking


class ScreensResults(Protocol):
    """What moderates a finished describe job's result before it is stored (moderation)."""

    async def describe_result(self, job: Job, result: dict[str, Any]) -> dict[str, Any]: ...


class ProviderState:
    """Applies what the provider says about jobs; ``on_done`` hears of each job this process
    holds that the provider is done with, as it moved (the tracker delivers it); ``results``
    moderates a finished describe job's prompts before they are stored."""

    def __init__(
        self,
        store: ProviderStateStorage,
        provider: ProviderClient,
        delivery: JobMessages,
        watch: JobWatch,
        limits: LimitsSettings,
        *,
        on_done: Callable[[Job], None],
        clock: Callable[[], float],
        monotonic: Callable[[], float],
        starting: Container[str],
        results: ScreensResults | None = None,
    ) -> None:
        self._store = store
        self._starting = starting
        """The jobs this process is starting right now (the starter's set)."""
        self.results = results
        self._provider = provider
        self._delivery = delivery
        self._watch = watch
        self._limits = limits
        self._on_done = on_done
        self._clock = clock
        self._monotonic = monotonic
        self._unresolved: dict[str, tuple[int, float]] = {}
        """Job id → (multi_fetch nulls in a row, when the first came on the monotonic clock)."""
        self.moves = MoveBatch(store.jobs)
        """The moves of records applied side by side go to storage together."""
        self._progress: dict[str, asyncio.Task[bool]] = {}
        self._progress_slots = asyncio.Semaphore(PROGRESS_CONCURRENCY)
        self.records_read = 0
        """Records polls read and applied (for tests and benchmarks): a task still in flight in
        the status its job has is not read (:meth:`poll_tasks`)."""

    async def apply_task_record(
        self,
        job: Job,
        record: TaskRecord,
        *,
        webhook_at: float | None = None,
        owned: bool = True,
        progress_later: bool = False,
    ) -> bool:
        """Mirror a family B record into the job; True if the job changed (or its progress
        message did). A job without a provider id (``unknown``, or still ``creating``) is
        adopted: the record's task id is stored with it. ``webhook_at``: the record came by
        webhook then (stored with it). ``owned=False``: another process holds the job, so only
        the store changes (its owner shows progress and delivers). ``progress_later`` (a poll
        round): the progress message is edited only when the job moved, and in the background
        (:meth:`show_progress_soon`), so a round never waits for the platform's write windows
        (the time shown moves with the progress ticker, :mod:`bot.features.jobs.tracking.ticker`);
        True then only if the job changed. A record naming another task than the job's is
        ignored (logged): it is no answer about this job. A record in flight that is behind the
        job's stored status (:data:`FORWARD_FROM`: queued once seen running) moves nothing and
        shows nothing, so progress shown never goes back; the check is the move's own
        compare-and-set, so a job read before a newer answer moved it is not shown back either."""
        if job.provider_id is not None and record.task_id != job.provider_id:
            log.warning(
                "job %s: a record of task %r was given for its task %s; ignored",
                job.id,
                record.task_id[:80],
                job.provider_id,
            )
            return False
        adopt: dict[str, Any] = {}
        if job.provider_id is None:
            adopt["provider_id"] = record.task_id
        if webhook_at is not None:
            adopt["last_webhook_at"] = webhook_at
        status = record.status
        if status == "finished":
            fields = task_result_fields(record)
            if job.type == "describe" and self.results is not None:
                fields["result"] = await self.results.describe_result(job, fields["result"])
            return await self.finish(job, "finished", owned=owned, **fields, **adopt)
        if status == "failed":
            errors = [m for m in record.task_result.error_messages if m.strip()]
            with speaking(job_language(job)):
                error = "\n".join(errors) or _("The service reported a failure without details.")
            return await self.finish(job, "failed", owned=owned, error=error, **adopt)
        mirrored = _MIRRORED.get(status)
        if mirrored is None:
            log.warning("job %s: unknown provider status %r", job.id, status)
            return False
        if job.status == "cancelled":
            return await self._follow_cancelled(job, adopt)
        changed = False
        forward = FORWARD_FROM[mirrored]
        if job.provider_id is None:
            adoptable = (_ADOPTABLE - IN_FLIGHT_STATUSES) | forward
            changed = await self.moves.transition(job.id, adoptable, mirrored, **adopt)
            current = changed
        elif job.status in IN_FLIGHT_STATUSES and (mirrored != job.status or not progress_later):
            changed = await self.moves.transition(job.id, forward, mirrored, **adopt)
            current = changed
            changed = changed and mirrored != job.status
            if not current and webhook_at is not None:
                await self._store.jobs.update_job(job.id, last_webhook_at=webhook_at)
        else:
            current = True
            if webhook_at is not None:
                await self._store.jobs.update_job(job.id, last_webhook_at=webhook_at)
        if not owned:
            return changed
        if not current:
            return changed
        if progress_later:
            if changed:
                self.show_progress_soon(job, status)
            return changed
        shown = await self._delivery.show_progress(job, status)
        return changed or shown

    async def _follow_cancelled(self, job: Job, adopt: dict[str, Any]) -> bool:
        """A cancelled job's task still runs: store only what identifies it (its task id,
        the webhook's time); nothing is shown. True if the job changed."""
        if not adopt:
            return False
        return await self.moves.transition(job.id, "cancelled", "cancelled", **adopt)

    def show_progress_soon(self, job: Job, status: str) -> None:
        """Edit ``job``'s progress message for ``status`` in the background,
        ``PROGRESS_CONCURRENCY`` at a time (skipped while an earlier one for the job is under
        way: the next tick brings a newer text)."""
        running = self._progress.get(job.id)
        if running is not None and not running.done():
            return
        task = asyncio.create_task(self._show(job, status), name=f"genbot-progress-{job.id}")
        self._progress[job.id] = task
        task.add_done_callback(lambda _: self._forget_progress(job.id, task))

    async def _show(self, job: Job, status: str) -> bool:
        async with self._progress_slots:
            return await self._delivery.show_progress(job, status)

    def _forget_progress(self, job_id: str, task: asyncio.Task[bool]) -> None:
        if self._progress.get(job_id) is task:
            del self._progress[job_id]
        if not task.cancelled() and task.exception() is not None:
            log.warning("progress edit of job %s failed: %r", job_id, task.exception())

    @property
    def busy(self) -> bool:
        """Whether background progress edits are under way."""
        return bool(self._progress)

    async def progress_idle(self, *, cancel: bool = False) -> None:
        """Wait until the background progress edits started so far are done (``cancel``:
        cancel them first)."""
        while self._progress:
            tasks = list(self._progress.values())
            if cancel:
                for task in tasks:
                    task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def finish(
        self, job: Job, status: JobStatus, *, owned: bool = True, **fields: Any
    ) -> bool:
        """Move ``job`` to ``status`` (``finished`` / ``failed``) with ``fields``; a job this
        process holds then goes to delivery. True if it moved. A job cancelled meanwhile
        (:data:`CANCELLED_KEEPS`) ends ``failed`` whatever the provider said, its error and
        result as the cancel left them, with the credits the provider reported: its delivery
        charges them and shows nothing."""
        self._unresolved.pop(job.id, None)
        moved = job.status != "cancelled" and await self.moves.transition(
            job.id, _FOLLOWED_UNCANCELLED, status, next_poll_at=None, **fields
        )
        if not moved:
            kept = {name: value for name, value in fields.items() if name in CANCELLED_KEEPS}
            moved = await self.moves.transition(
                job.id, "cancelled", "failed", next_poll_at=None, **kept
            )
        if moved and owned:
            self._watch.touch(job.id)
            self._on_done(job)
        return moved

    async def time_out(self, job: Job) -> bool:
        """Settle a job older than ``job_timeout_seconds`` (see
        :mod:`bot.features.jobs.tracking.tracker`); True if it changed."""
        if job.status == "creating" and job.id in self._starting:
            return False
        if job.status == "creating" and job.progress_message_id is None:
            return (await self._delivery.mark_not_started(job, NOT_STARTED)).status != "creating"
        minutes = self._limits.job_timeout_seconds / 60
        unconfirmed = job.status in ("creating", "unknown")
        result = result_with(job, timed_out=True, unconfirmed=unconfirmed or None)
        with speaking(job_language(job)):
            if unconfirmed:
                error = wording.unconfirmed_error(minutes)
            else:
                error = _(
                    "The service did not finish this job within {minutes} minutes.",
                    minutes=format_number(minutes, grouping=False),
                )
        return await self.finish(job, "failed", error=error, result=result)

    async def poll_tasks(
        self,
        jobs: Sequence[Job | JobBrief],
        *,
        mark_polled: bool,
        spread: float = 0.0,
        claimed: Mapping[str, str] | None = None,
        owned: bool = True,
    ) -> bool:
        """Read family B ``jobs`` with multi_fetch, per provider key (a task id is the account's
        that made it), and apply the calls' answers as they come, while the other calls are
        under way: per key, the first answer at once, then together all those that came while
        one was being applied, ``APPLY_AT_MOST`` at a time (:meth:`_apply_parts`: a handful of
        storage round trips per step, not per answer). A job the provider is done with goes to
        delivery as its answer is applied. A call that fails loses only its own tasks this round
        (logged). A task still in flight in its job's status is left out of the answer (nothing
        to apply: most of a poll over thousands of jobs), as is a cancelled job's task still in
        flight in any status (it is only followed to its end).
        ``mark_polled``: store the poll's time of the jobs each answer was about, for the
        webhook backstop. ``spread``: each key's calls come evenly over ``spread`` seconds when
        there are more than go at once (:meth:`bot.api.tasks.TaskClient.multi_fetch_parts`).
        True if any job changed. ``claimed``: job id → the task to read for a job without a
        task id yet (one a notification named: the provider's answer for it is applied, its id
        adopted); a job with neither is left out. ``owned=False``: another process holds the
        jobs, so only the store changes (:meth:`apply_task_record`).

        A key whose poll fails (storage) does not cut the others short: the round ends once
        every key's poll has, then raises the error of the first key that failed (in the order
        of ``jobs``; the others' errors are logged), so no poll of it still writes once it has
        failed. Cancelling the round cancels every key's poll and waits for them."""
        by_key: dict[str, dict[str, Job | JobBrief]] = {}
        for job in jobs:
            if task_id := job.provider_id or (claimed or {}).get(job.id):
                by_key.setdefault(job.provider_key or "", {})[task_id] = job
        ends = await asyncio.gather(
            *(
                self._poll_key(key, batch, mark_polled, spread, owned)
                for key, batch in by_key.items()
            ),
            return_exceptions=True,
        )
        failed = [
            (key, end)
            for key, end in zip(by_key, ends, strict=True)
            if isinstance(end, BaseException)
        ]
        for key, error in failed[1:]:
            log.warning("polling the tasks of key %s failed as well: %r", key, error)
        if failed:
            raise failed[0][1]
        return any(ends)

    async def _poll_key(
        self,
        key: str,
        batch: dict[str, Job | JobBrief],
        mark_polled: bool,
        spread: float,
        owned: bool,
    ) -> bool:
        """One key's tasks read with multi_fetch, the answers applied as they come."""
        known = {task_id: _known_as(job) for task_id, job in batch.items()}
        try:
            parts = self._provider.tasks.multi_fetch_parts(
                batch, key=key, known=known, spread=spread
            )
        except ApiError as error:
            log.warning("multi_fetch of %d tasks (key %s) refused: %s", len(batch), key, error)
            return False
        changed = False
        async with aclosing(parts):
            async for answers in parts:
                for part in answers:
                    if part.error is not None:
                        log.warning(
                            "multi_fetch of %d tasks (key %s) failed: %s",
                            len(part.task_ids),
                            key,
                            part.error,
                        )
                answered = [part for part in answers if part.error is None]
                for start in range(0, len(answered), APPLY_AT_MOST):
                    chunk = answered[start : start + APPLY_AT_MOST]
                    changed |= await self._apply_parts(batch, chunk, mark_polled, owned)
        return changed

    async def _apply_parts(
        self,
        batch: dict[str, Job | JobBrief],
        parts: list[MultiFetchPart],
        mark_polled: bool,
        owned: bool,
    ) -> bool:
        """Apply the answers of multi_fetch calls that came together (the first of a round
        alone, then those that came while one was being applied): their poll marks are one
        statement, the briefs among the jobs they have records of are read whole in one, and
        their moves go to storage together (one turn's :class:`MoveBatch`); each job the
        provider is done with goes to delivery as it moves. A task whose record named another
        task (:attr:`MultiFetchPart.misnamed`) was not answered: its job is neither marked nor
        moved. When one job's apply fails, the others' are waited for, then the first error is
        raised."""
        answered_ids = [
            task_id
            for part in parts
            for task_id in part.task_ids
            if task_id in batch and task_id not in part.misnamed
        ]
        if mark_polled:
            await self._store.tracking.mark_polled(batch[task_id].id for task_id in answered_ids)
        for part in parts:
            for task_id in part.task_ids:
                if (
                    task_id in batch
                    and task_id not in part.records
                    and task_id not in part.misnamed
                ):
                    self._unresolved.pop(batch[task_id].id, None)
        answered = [
            (batch[task_id], record)
            for part in parts
            for task_id, record in part.records.items()
            if task_id in batch
        ]
        whole = await self._whole([job for job, _ in answered])
        results = await asyncio.gather(
            *(
                self._apply_read(whole[job.id], record, owned)
                for job, record in answered
                if job.id in whole
            ),
            return_exceptions=True,
        )
        failed = [result for result in results if isinstance(result, BaseException)]
        if failed:
            raise failed[0]
        return any(results)

    async def _whole(self, jobs: list[Job | JobBrief]) -> dict[str, Job]:
        """``jobs`` as whole jobs, by id: the briefs among them read in one statement."""
        known = {job.id: job for job in jobs if isinstance(job, Job)}
        briefs = [job.id for job in jobs if not isinstance(job, Job)]
        return known | (await self._store.tracking.whole_jobs(briefs) if briefs else {})

    async def _apply_read(self, job: Job, record: TaskRecord | None, owned: bool) -> bool:
        """Apply what multi_fetch said of ``job``'s task; ``None``: it could not resolve it
        (for a job without a task id yet, the task a notification named: not this job's, so
        nothing changes)."""
        if record is None:
            return job.provider_id is not None and await self._unresolved_task(job)
        self.records_read += 1
        self._unresolved.pop(job.id, None)
        return await self.apply_task_record(job, record, owned=owned, progress_later=True)

    async def _unresolved_task(self, job: Job) -> bool:
        """multi_fetch answered null for a task genbot created: after :data:`LOST_AFTER_NULLS`
        such answers in a row spanning ``poll_interval_max``, the job fails as lost (the user is
        told; it may or may not have been charged). True if the job changed."""
        now = self._monotonic()
        count, since = self._unresolved.get(job.id, (0, now))
        count += 1
        if count < LOST_AFTER_NULLS or now - since < self._limits.poll_interval_max:
            self._unresolved[job.id] = (count, since)
            return False
        log.warning(
            "job %s: the provider answered null for its task %s %d times; reporting it lost",
            job.id,
            job.provider_id,
            count,
        )
        result = result_with(job, lost=True)
        with speaking(job_language(job)):
            error = _(_LOST_TASK, count=LOST_AFTER_NULLS)
        return await self.finish(job, "failed", error=error, result=result)

    async def poll_diffusion(self, jobs: Iterable[Job], default_delay: float) -> bool:
        """Fetch diffusion ``jobs`` (a few at a time) and apply the answers; without an ``eta``
        the next fetch is ``default_delay`` seconds away. True if any job changed."""
        slots = asyncio.Semaphore(DIFFUSION_FETCH_CONCURRENCY)

        async def one(job: Job) -> bool:
            async with slots:
                return await self._fetch_diffusion(job, default_delay)

        return any(await asyncio.gather(*(one(job) for job in jobs)))

    async def _fetch_diffusion(self, job: Job, default_delay: float) -> bool:
        assert job.provider_id is not None
        now = self._clock()
        try:
            answer = await self._provider.diffusion.fetch(
                int(job.provider_id), key=job.provider_key or ""
            )
        except DiffusionFailed as error:
            with speaking(job_language(job)):
                said = provider_text(error)
            return await self.finish(job, "failed", error=said)
        except ApiError as error:
            log.warning("diffusion fetch of job %s failed: %s", job.id, error)
            await self._store.jobs.update_job(
                job.id, next_poll_at=now + self._limits.poll_interval_max
            )
            return False
        if answer.is_ready:
            return await self.finish(job, "finished", **diffusion_result_fields(answer))
        next_poll = now + poll_delay(answer.eta, self._limits, default_delay)
        await self._store.jobs.update_job(job.id, next_poll_at=next_poll, last_polled_at=now)
        changed = False
        if job.status != "processing":
            changed = await self._store.jobs.transition(job.id, IN_FLIGHT_STATUSES, "processing")
        shown = await self._delivery.show_progress(job, "processing")
        return changed or shown
