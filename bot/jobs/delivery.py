"""Everything jobs show on a platform: progress messages, results, failure reports.

Every write goes through the process-wide :class:`~bot.budget.RenderBudget`, so job messages
and streamed chat answers share one budget per channel and workspace and never cause
rate-limit hits: progress edits are skipped when there is no budget right now (the next poll
brings a newer one), results and reports wait for it (bounded) because they must land.

Results are posted exactly once: :meth:`Delivery.deliver` claims the job with a compare-and-set
(``finished → posting`` or ``failed → reporting``) before posting, and the move to ``posted`` /
``failed_posted`` commits the message links with it, after the progress message shows the
outcome (a process that dies in between redoes both: the edit is idempotent). The platform's
part is covered by the message's key (``<job id>.result`` / ``<job id>.failure``): an attempt
after a claim that recorded no outcome — the platform may have accepted the post just before the
process died or the call failed — gets ``may_exist``, and the surface returns the message it
already shows instead of posting it twice. A failed attempt releases the claim and stores the
attempt count and the time of the next attempt (``next_poll_at``) with it, so retries back off
exponentially (:class:`DeliveryRetry`) across restarts; the tracker runs them when due. From the
``image_attempts``-th attempt on, a result whose image cannot be downloaded is posted with the
provider's link instead (at once when the image arrived but cannot be read: a damaged file or a
decompression bomb does not improve with retries); once the retries are used up the job ends
``failed_posted`` and its progress message says the result could not be posted.

Progress edits are serialized per job with the final edits and never made once the job's
messages are final (remembered in memory: deliveries run in this process), so a late poll
answer never overwrites a finished job's progress message.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Protocol

from bot import metrics, posting
from bot.actions import describe_buttons, diffusion_buttons
from bot.budget import BudgetTimeout, Grant, RenderBudget
from bot.core import SurfaceRegistry
from bot.events import (
    Button,
    Event,
    ImageFile,
    MessageRef,
    OutMessage,
    Place,
    RateLimited,
    Surface,
    SurfaceError,
)
from bot.follow_ups import follow_up_buttons
from bot.jobs import texts
from bot.jobs.media import ImageBytes, MediaError, MediaFetcher, UnreadableImage
from bot.jobs.retry import DeliveryRetry
from bot.jobs.watch import JobWatch
from bot.status import end_status, show_status
from storage import (
    TERMINAL_STATUSES,
    DeliveryClaims,
    Job,
    JobMessage,
    JobMessageKind,
    JobStatus,
    JobWriter,
    MessageLinks,
)

log = logging.getLogger(__name__)

URGENT_BUDGET_WAIT = 30.0
PROGRESS_BUDGET_WAIT = 0.3
FINAL_MEMORY = 10_000
"""How many jobs with final messages are remembered: far more than finish while one poll's
answer is on its way."""
MAX_RATE_LIMIT_RETRIES = 3

Buttons = tuple[tuple[Button, ...], ...]


def place_of(job: Job) -> Place:
    """Where a job's messages go."""
    return Place(
        job.platform,
        job.workspace_id,
        job.channel_id,
        job.thread_id,
        bool(job.parameters.get("is_dm", False)),
    )


def progress_key(job: Job) -> str:
    """The key of ``job``'s progress message."""
    return f"{job.id}.progress"


def once(message: OutMessage, job: Job, kind: str) -> OutMessage:
    """``message`` keyed as ``job``'s one message of ``kind`` (a claimed job), marked as
    possibly posted already when an earlier claim did not record its outcome."""
    return replace(message, key=f"{job.id}.{kind}", may_exist=job.post_claims > 1)


class DeliveryStorage(JobWriter, DeliveryClaims, MessageLinks, Protocol):
    """What delivery uses: job reads and moves, delivery claims, message links."""


class Delivery:
    """Posts and edits the messages of jobs on their platform's surface."""

    def __init__(
        self,
        store: DeliveryStorage,
        surfaces: SurfaceRegistry,
        budget: RenderBudget,
        media: MediaFetcher,
        watch: JobWatch,
        *,
        clock: Callable[[], float] = time.time,
        retry: DeliveryRetry | None = None,
    ) -> None:
        self._store = store
        self._surfaces = surfaces
        self._budget = budget
        self._media = media
        self._watch = watch
        self._clock = clock
        self.retry = retry or DeliveryRetry()
        self._shown: dict[str, str] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._final: OrderedDict[str, None] = OrderedDict()

    # Writing under the budget -----------------------------------------------------------------

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        """Post ``message`` (an urgent write: waits for budget, bounded, then posts anyway)."""
        surface = self._surfaces.get(place.platform)
        for _ in range(MAX_RATE_LIMIT_RETRIES):
            _, grant = await self._acquire(surface, place, urgent=True)
            try:
                return await surface.send(place, message, origin=origin)
            except RateLimited as limited:
                await self._penalize(surface, place, limited)
            finally:
                if grant is not None:
                    grant.finish()
        return await surface.send(place, message, origin=origin)

    async def edit(self, job: Job, text: str, *, urgent: bool) -> bool:
        """Set the progress message of ``job`` to ``text``; skipped when it already shows it
        or (unless ``urgent``) when there is no budget right now. True if written."""
        async with self._lock(job.id):
            return await self._edit(job, text, urgent=urgent)

    def _lock(self, job_id: str) -> asyncio.Lock:
        return self._locks.setdefault(job_id, asyncio.Lock())

    async def _edit(self, job: Job, text: str, *, urgent: bool) -> bool:
        if job.progress_message_id is None or self._shown.get(job.id) == text:
            return False
        place = place_of(job)
        if place.platform not in self._surfaces:
            return False
        surface = self._surfaces.get(place.platform)
        ref = MessageRef(place, job.progress_message_id)
        go, grant = await self._acquire(surface, place, urgent=urgent)
        if not go:
            return False
        try:
            await surface.edit(ref, OutMessage(text=text))
        except RateLimited as limited:
            await self._penalize(surface, place, limited, wait=False)
            return False
        except (SurfaceError, KeyError) as error:
            log.warning("could not edit the progress message of job %s: %s", job.id, error)
            return False
        finally:
            if grant is not None:
                grant.finish()
        self._shown[job.id] = text
        return True

    def forget(self, job_id: str) -> None:
        """Drop what is remembered about a job whose messages are final, and remember (for a
        while) that they are: a late progress update about it changes nothing."""
        self._shown.pop(job_id, None)
        self._locks.pop(job_id, None)
        self._mark_final(job_id)

    def _mark_final(self, job_id: str) -> None:
        self._final[job_id] = None
        while len(self._final) > FINAL_MEMORY:
            self._final.popitem(last=False)

    async def _show_outcome(self, job: Job, text: str) -> None:
        """Set the progress message to ``job``'s outcome, which no later progress update
        changes; never raises, so the outcome is recorded whatever the platform answers."""
        self._mark_final(job.id)
        try:
            await self.edit(job, text, urgent=True)
        except Exception:
            log.exception("could not show the outcome of job %s", job.id)
        if job.platform in self._surfaces:
            await end_status(self._surfaces.get(job.platform), place_of(job), "drawing")

    async def _acquire(
        self, surface: Surface, place: Place, *, urgent: bool
    ) -> tuple[bool, Grant | None]:
        """Whether to write now, and the budget grant to finish once the platform call returns
        (writes count until they land, so a busy event loop cannot push them past the
        platform's limit). An urgent write goes ahead without a grant when the wait runs out."""
        wait = URGENT_BUDGET_WAIT if urgent else PROGRESS_BUDGET_WAIT
        deadline = self._budget.clock.monotonic() + (wait if urgent else 0.0)
        try:
            async with asyncio.timeout(wait):
                grant = await self._budget.acquire(
                    place, surface.limits, urgent=urgent, deadline=deadline, hold=True
                )
        except (BudgetTimeout, TimeoutError):
            return urgent, None
        return True, grant

    async def _penalize(
        self, surface: Surface, place: Place, limited: RateLimited, *, wait: bool = True
    ) -> None:
        self._budget.penalize(place, surface.limits, limited.retry_after)
        if wait:
            await asyncio.sleep(min(max(limited.retry_after, 0.0), URGENT_BUDGET_WAIT))

    # Progress ---------------------------------------------------------------------------------

    async def post_progress(self, job: Job, origin: Event | None) -> Job:
        """Post the first progress message of a new job and link it (the job row is already
        committed, so the message is recoverable after a restart)."""
        place = origin.place if origin is not None else place_of(job)
        text = texts.progress_text(job, "creating")
        ref = await self.send(place, OutMessage(text=text, key=progress_key(job)), origin=origin)
        await self._store.update_job(job.id, progress_message_id=ref.message_id)
        await self._store.link_message(
            job.platform, job.channel_id, ref.message_id, job.id, "progress"
        )
        self._shown[job.id] = text
        await show_status(self._surfaces.get(place.platform), place, "drawing", origin=origin)
        refreshed = await self._store.get_job(job.id)
        return refreshed or job

    async def recover_progress(self, job: Job) -> Job:
        """Link the progress message of a job whose process died between posting it and
        linking it, when the platform's surface can find it by its key (``posted``)."""
        surface = self._surfaces.get(job.platform) if job.platform in self._surfaces else None
        find: Callable[[Place, str], Awaitable[MessageRef | None]] | None
        find = getattr(surface, "posted", None)
        if job.progress_message_id is not None or find is None:
            return job
        try:
            ref = await find(place_of(job), progress_key(job))
        except (SurfaceError, RateLimited) as error:
            log.warning("could not look for the progress message of job %s: %s", job.id, error)
            return job
        if ref is None:
            return job
        await self._store.update_job(job.id, progress_message_id=ref.message_id)
        await self._store.link_message(
            job.platform, job.channel_id, ref.message_id, job.id, "progress"
        )
        return await self._store.get_job(job.id) or job

    async def show_progress(self, job: Job, status: str, elapsed: float | None) -> bool:
        """Edit the progress message for a provider status, when its text changes and the job
        is still in flight (a late answer about a job whose messages are final changes
        nothing)."""
        text = texts.progress_text(job, status, elapsed)
        if self._shown.get(job.id) == text or job.status in TERMINAL_STATUSES:
            return False
        async with self._lock(job.id):
            if job.id in self._final:
                return False
            return await self._edit(job, text, urgent=False)

    async def mark_not_started(self, job: Job, reason: str) -> Job:
        """Move a ``creating`` job that certainly started nothing at the provider to
        ``create_failed`` and say why in its progress message (found by its key when it was
        posted but never linked)."""
        moved = await self._store.transition(job.id, "creating", "create_failed", error=reason)
        current = await self.recover_progress(await self._store.get_job(job.id) or job)
        if moved:
            metrics.job_failed(job.type)
            await self._show_outcome(current, texts.create_failed_text(current, reason))
            self.forget(job.id)
        self._watch.touch(job.id)
        return current

    async def mark_unconfirmed(self, job: Job, reason: str) -> Job:
        """Move a ``creating`` job the provider may have received to ``unknown`` and tell the
        user (see :func:`bot.jobs.texts.unconfirmed_text`)."""
        moved = await self._store.transition(job.id, "creating", "unknown", error=reason)
        current = await self._store.get_job(job.id) or job
        if moved:
            await self.edit(current, texts.unconfirmed_text(current, reason), urgent=True)
        self._watch.touch(job.id)
        return current

    # Results and failures ---------------------------------------------------------------------

    async def deliver(self, job_id: str) -> float | None:
        """Post the result of a finished job or report a failed one, exactly once, when its
        next attempt is due. Returns when to try again if this attempt failed, else None."""
        job = await self._store.claim_delivery(job_id, self._surfaces.platforms(), self._clock())
        if job is None:
            return None
        if job.status == "posting":
            return await self._post_result(job)
        return await self._report_failure(job)

    async def _post_result(self, job: Job) -> float | None:
        try:
            message, extra = await self._result_message(job)
            ref = await self.send(place_of(job), once(message, job, "result"))
        except Exception as error:
            return await self._retry_later(job, "posting", "finished", error)
        elapsed = job.finished_at - job.created_at if job.finished_at is not None else None
        await self._show_outcome(job, texts.done_text(job, elapsed))
        await self._finish(job, "posting", "posted", ref, "result", result={**job.result, **extra})
        self.forget(job.id)
        return None

    async def _report_failure(self, job: Job) -> float | None:
        timed_out = bool(job.result.get("timed_out"))
        message = OutMessage(
            text=texts.failure_text(job, timed_out), mention_user_id=job.requester_id
        )
        try:
            ref = await self.send(place_of(job), once(message, job, "failure"))
        except Exception as error:
            return await self._retry_later(job, "reporting", "failed", error)
        await self._show_outcome(job, texts.failed_progress_text(job))
        await self._finish(job, "reporting", "failed_posted", ref, "other")
        self.forget(job.id)
        return None

    async def _finish(
        self,
        job: Job,
        claimed: JobStatus,
        done: JobStatus,
        ref: MessageRef,
        kind: JobMessageKind,
        **fields: Any,
    ) -> None:
        link = JobMessage(job.platform, job.channel_id, ref.message_id, job.id, kind)
        await self._store.transition(
            job.id, claimed, done, result_message_id=ref.message_id, links=[link], **fields
        )
        self._watch.touch(job.id)
        if done == "posted":
            waited = self._clock() - job.finished_at if job.finished_at is not None else None
            metrics.job_completed(job.type, job.platform, waited)
        else:
            metrics.job_failed(job.type)

    async def _retry_later(
        self, job: Job, claimed: JobStatus, release: JobStatus, error: Exception
    ) -> float | None:
        failures = job.delivery_attempts + 1
        delay = self.retry.delay(failures)
        log.warning("delivering job %s failed (attempt %d): %r", job.id, failures, error)
        if delay is not None:
            retry_at = self._clock() + delay
            await self._store.transition(
                job.id, claimed, release, delivery_attempts=failures, next_poll_at=retry_at
            )
            return retry_at
        await self._show_outcome(job, texts.not_posted_text(job))
        await self._store.transition(
            job.id,
            claimed,
            "failed_posted",
            delivery_attempts=failures,
            error=f"not posted: {error}",
        )
        metrics.job_failed(job.type)
        self._watch.touch(job.id)
        self.forget(job.id)
        return None

    async def _result_message(self, job: Job) -> tuple[OutMessage, dict[str, Any]]:
        """The result message and what to remember about it (the image's size)."""
        mention = job.requester_id
        if job.family == "task" and job.type == "describe":
            prompts = [str(p) for p in job.result.get("prompts", [])]
            count = min(len(prompts), 4)
            buttons = describe_buttons(job.id, count) if count else ()
            text = texts.describe_text(job, prompts)
            return OutMessage(text=text, buttons=buttons, mention_user_id=mention), {}
        if job.family == "task" and job.type == "seed":
            text = texts.seed_text(job, str(job.result.get("seed", "")))
            return OutMessage(text=text, mention_user_id=mention), {}
        images: list[ImageFile] = []
        extra: dict[str, Any] = {}
        try:
            for number, url in enumerate(self._image_urls(job), start=1):
                image = await self._download(job, url)
                suffix = f"-{number}" if number > 1 else ""
                filename = f"{job.type}-{job.id}{suffix}.{image.extension}"
                images.append(ImageFile(filename, image.data, image.content_type))
                if number == 1:
                    extra = {"width": image.width, "height": image.height}
        except MediaError as error:
            retried = job.delivery_attempts + 1 < self.retry.image_attempts
            if retried and not isinstance(error, UnreadableImage):
                raise
            url = job.result_urls[0] if job.result_urls else ""
            text = texts.unavailable_image_text(job, str(error), url)
            return OutMessage(text=text, buttons=self.buttons(job), mention_user_id=mention), {}
        size = (extra["width"], extra["height"]) if extra else None
        message = OutMessage(
            text=texts.result_text(job),
            images=tuple(images),
            buttons=self.buttons(job, size),
            mention_user_id=mention,
        )
        return message, extra

    def _image_urls(self, job: Job) -> list[str]:
        if job.family == "diffusion":
            return list(job.result_urls)
        return job.result_urls[:1]

    async def _download(self, job: Job, url: str) -> ImageBytes:
        if job.family == "diffusion":
            return await self._media.fetch(url)
        last: MediaError | None = None
        for candidate in [url, *job.result_urls[1:]]:
            try:
                return await self._media.fetch(candidate)
            except MediaError as error:
                last = error
        assert last is not None
        raise last

    async def redraw_buttons(self, job: Job) -> None:
        """Show ``job``'s current buttons on its posted result (e.g. one the provider refused,
        now disabled); best effort: a failure is logged."""
        if job.status != "posted" or job.result_message_id is None:
            return
        place = place_of(job)
        message = OutMessage(
            text=texts.result_text(job),
            buttons=self.buttons(job),
            mention_user_id=job.requester_id,
        )
        try:
            surface = self._surfaces.get(place.platform)
            ref = MessageRef(place, job.result_message_id)
            await posting.edit(self._budget, surface, ref, message)
        except Exception as error:
            log.warning("could not redraw the buttons of job %s: %r", job.id, error)

    def buttons(self, job: Job, size: tuple[int, int] | None = None) -> Buttons:
        """The buttons under ``job``'s result (``size``: its image's, when known)."""
        if job.family == "diffusion":
            return diffusion_buttons(job.id, upscale=job.type != "upscale")
        per_row = self._surfaces.get(job.platform).limits.max_buttons_per_row
        return follow_up_buttons(job, per_row, size)
