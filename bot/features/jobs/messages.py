"""Everything jobs show on a platform: progress messages, results, failure reports.

Every write goes through the process's :class:`~bot.outbox.Outbox`, so job messages and
streamed chat answers share one window per channel and workspace and never cause rate-limit
hits: progress edits are skipped when there is no room right now (the next poll brings a newer
one), results and reports wait for it (bounded) because they must land.

One message per job: the progress message becomes the result (image, title, buttons) or the
failure report, where the platform lets an edit add images (:attr:`SurfaceLimits.edits_add_images`;
a text-only outcome always can). Where not (Slack), the result is posted and the progress
message deleted (or, failing that, collapsed into a one-line reference). A progress message that
is gone (a user deleted it) is replaced by a new post.

Outcomes are shown exactly once: :meth:`Delivery.deliver` claims the job with a compare-and-set
(``finished → posting`` or ``failed → reporting``) before writing, and the move to ``posted`` /
``failed_posted`` commits the message links with it (a process that dies in between redoes the
write: an edit is idempotent). A post is covered by the message's key (``<job id>.result`` /
``<job id>.failure``): an attempt after a claim that recorded no outcome — the platform may have
accepted the post just before the process died or the call failed — gets ``may_exist``, and the
surface returns the message it already shows instead of posting it twice. A failed attempt
releases the claim and stores the attempt count and the time of the next attempt
(``next_poll_at``) with it, so retries back off exponentially (:class:`DeliveryRetry`) across
restarts; the tracker runs them when due. From the ``image_attempts``-th attempt on, a result
whose image cannot be downloaded is posted with the provider's link instead (at once when the
image arrived but cannot be read: a damaged file or a decompression bomb does not improve with
retries); once the retries are used up the job ends ``failed_posted`` and its progress message
says the result could not be posted. A cancelled job (``result["cancelled"]``) is hidden: its
progress message is deleted.

Progress messages themselves — posted as a job starts, kept current, and never edited once the
job's messages are final — are :class:`~bot.features.jobs.progress_messages.ProgressMessages`, which
:class:`Delivery` extends.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from bot.features.jobs import wording
from bot.features.jobs.experience import Experience
from bot.features.jobs.marks import ButtonMarks, place_of
from bot.features.jobs.progress_messages import ProgressMessages
from bot.features.jobs.result_messages import ResultMessages
from bot.features.jobs.tracking.retry import DeliveryRetry
from bot.features.jobs.tracking.watch import JobWatch
from bot.kernel import (
    DeletesMessages,
    MediaFetcher,
    MessageGone,
    MessageRef,
    OutMessage,
    SurfaceError,
    metrics,
)
from bot.outbox import Delete, Edit, Outbox, Post, WritePolicy
from storage import (
    DeliveryClaims,
    Job,
    JobMessage,
    JobMessageKind,
    JobResult,
    JobStatus,
    JobWriter,
    MessageLinks,
    result_with,
)

log = logging.getLogger(__name__)


class UnrecordedDelivery(Exception):
    """A delivery claim whose outcome was never recorded (the write failed)."""

    def __str__(self) -> str:
        return "its delivery stopped before its outcome was recorded"


def once(message: OutMessage, job: Job, kind: str) -> OutMessage:
    """``message`` keyed as ``job``'s one message of ``kind`` (a claimed job), marked as
    possibly posted already when an earlier claim did not record its outcome."""
    return replace(message, key=f"{job.id}.{kind}", may_exist=job.post_claims > 1)


class DeliveryStorage(JobWriter, DeliveryClaims, MessageLinks, Protocol):
    """What delivery uses: job reads and moves, delivery claims, message links."""


class Delivery(ProgressMessages):
    """Posts and edits the messages of jobs on their platform's surface."""

    _store: DeliveryStorage

    def __init__(
        self,
        store: DeliveryStorage,
        outbox: Outbox,
        media: MediaFetcher,
        watch: JobWatch,
        *,
        clock: Callable[[], float] = time.time,
        retry: DeliveryRetry | None = None,
        experience: Experience | None = None,
    ) -> None:
        super().__init__(store, outbox, watch, clock=clock, experience=experience)
        self.retry = retry or DeliveryRetry()
        self.results = ResultMessages(outbox, media)
        self.marks = ButtonMarks(store, outbox, self.results)

    # Results and failures ---------------------------------------------------------------------

    async def deliver(self, job_id: str) -> float | None:
        """Post the result of a finished job or report a failed one, exactly once, when its
        next attempt is due. Returns when to try again if this attempt failed, else None."""
        job = await self._store.claim_delivery(job_id, self._outbox.platforms(), self._clock())
        if job is None:
            return None
        if job.status == "posting":
            return await self._post_result(job)
        return await self._report_failure(job)

    async def _post_result(self, job: Job) -> float | None:
        try:
            link_instead = job.delivery_attempts + 1 >= self.retry.image_attempts
            message, size = await self.results.result(job, link_instead=link_instead)
            ref = await self._show(job, message, "result")
        except Exception as error:
            return await self._retry_later(job, "posting", "finished", error)
        await self._finish(
            job, "posting", "posted", ref, "result", result=result_with(job, size=size)
        )
        self.experience.observe(job)
        self.forget(job.id)
        return None

    async def _report_failure(self, job: Job) -> float | None:
        if JobResult.of(job).cancelled:
            return await self._hide(job)
        timed_out = JobResult.of(job).timed_out
        message = OutMessage(
            text=wording.failure_text(job, timed_out), mention_user_id=job.requester_id
        )
        try:
            ref = await self._show(job, message, "failure")
        except Exception as error:
            return await self._retry_later(job, "reporting", "failed", error)
        await self._finish(job, "reporting", "failed_posted", ref, "other")
        self.forget(job.id)
        return None

    async def _show(self, job: Job, message: OutMessage, kind: str) -> MessageRef:
        """Make the progress message show ``message`` (see the module docstring); returns the
        message that shows it."""
        place = place_of(job)
        limits = self._outbox.limits(place.platform)
        message = replace(message, card=True)
        progress = MessageRef(place, job.progress_message_id) if job.progress_message_id else None
        self._mark_final(job.id)
        async with self._lock(job.id):
            if progress is not None and (limits.edits_add_images or not message.images):
                try:
                    await self._outbox.write(
                        place, Edit(progress, message), WritePolicy.MUST_DELIVER
                    )
                except MessageGone:
                    log.info("the progress message of job %s is gone; posting anew", job.id)
                    progress = None
                else:
                    self._shown.pop(job.id, None)
                    return progress
            keyed = once(message, job, kind)
            ref = await self._outbox.write(place, Post(keyed), WritePolicy.MUST_DELIVER)
        if progress is not None:
            await self._retire(job, progress, wording.moved_text(job))
        return ref

    async def _retire(self, job: Job, ref: MessageRef, collapsed: str) -> None:
        """Delete a progress message (where the surface can), else collapse it to
        ``collapsed``; never raises."""
        try:
            if self._outbox.can(ref.place.platform, DeletesMessages):
                try:
                    await self._outbox.write(ref.place, Delete(ref), WritePolicy.MUST_DELIVER)
                    return
                except MessageGone:
                    return
                except SurfaceError as error:
                    log.warning("could not delete the progress message of %s: %s", job.id, error)
            collapsed_message = OutMessage(text=collapsed, card=True)
            await self._outbox.write(
                ref.place, Edit(ref, collapsed_message), WritePolicy.MUST_DELIVER
            )
        except Exception as error:
            log.warning("could not retire the progress message of job %s: %r", job.id, error)

    async def _hide(self, job: Job) -> float | None:
        """Remove a cancelled job's progress message and end the job."""
        self._mark_final(job.id)
        if job.progress_message_id is not None and job.platform in self._outbox:
            ref = MessageRef(place_of(job), job.progress_message_id)
            async with self._lock(job.id):
                await self._retire(job, ref, wording.cancelled_text(job))
        await self._store.transition(job.id, "reporting", "failed_posted", fence=job.lease)
        self._watch.touch(job.id)
        await self._end_drawing(job)
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
        recorded = await self._store.transition(
            job.id,
            claimed,
            done,
            result_message_id=ref.message_id,
            links=[link],
            fence=job.lease,
            **fields,
        )
        self._watch.touch(job.id)
        if not recorded:
            log.info("job %s was taken over while it was delivered; its owner records it", job.id)
            return
        await self._end_drawing(job)
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
                job.id,
                claimed,
                release,
                delivery_attempts=failures,
                next_poll_at=retry_at,
                fence=job.lease,
            )
            return retry_at
        await self._show_outcome(job, wording.not_posted_text(job))
        await self._store.transition(
            job.id,
            claimed,
            "failed_posted",
            delivery_attempts=failures,
            error=f"not posted: {error}",
            fence=job.lease,
        )
        metrics.job_failed(job.type)
        self._watch.touch(job.id)
        self.forget(job.id)
        return None

    async def release_stranded(self, job: Job) -> bool:
        """Release a claim (``posting`` / ``reporting``) no delivery is working on any more
        because the write recording its outcome or its release failed: like a failed
        attempt, its next one is backed off, or the job is reported as not posted once the
        retries are used up (an attempt that did post is found by its key or edits the same
        message again, so nothing shows twice). True if the job moved."""
        release: JobStatus = "finished" if job.status == "posting" else "failed"
        await self._retry_later(job, job.status, release, UnrecordedDelivery())
        return True

    async def redraw_buttons(self, job: Job) -> None:
        """Show ``job``'s current buttons on its posted result (e.g. one the provider refused,
        now disabled); best effort: a failure is logged."""
        await self.marks.redraw(job)
