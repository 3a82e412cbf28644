"""Everything a job shows on a platform: its progress message, then its result or its failure
report (:class:`JobMessages`).

Every write goes through the process's :class:`~bot.outbox.Outbox`, so job messages and
streamed chat answers share one window per channel and workspace and never cause rate-limit
hits: progress edits are skipped when no room comes within their short wait, leaving a quarter
of each window free (``PROGRESS_SPARE``; the next poll brings a newer one), results and reports
wait for room (bounded) because they must land.

The progress message is posted (keyed ``<job id>.progress``) and linked as the job starts, then
kept current — its status in words, the time since it started and the time left, its place
among the requester's jobs, and ❌ Cancel. Progress edits are serialized per job with the final
edits and never made once the job's messages are final (remembered in memory: deliveries run in
this process), so a late poll answer never overwrites a finished job's result. A progress update
is also made only while the job is still in flight under the lease it was read with (checked as
the edit is made, before it waits for room): a process that lost the job (taken over, or given
back to a joining process) does not overwrite what its new owner shows.

One message per job: the progress message becomes the result (image, title, buttons) or the
failure report, where a platform lets an edit add images (:attr:`PlatformProfile.edits_add_images`;
a text-only outcome always can). Where not (Slack), the result is posted and the progress
message deleted (or, failing that, collapsed into a one-line reference). A progress message that
is gone (a user deleted it) is replaced by a new post.

Outcomes are shown exactly once: :meth:`JobMessages.deliver` claims the job with a compare-and-set
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
progress message is deleted when it is cancelled (:meth:`JobMessages.hide_cancelled`) — or, when
an admin cancelled it for its requester (``result["cancelled_by_admin"]``), made to tell them so
(:func:`~bot.features.jobs.wording.admin_cancelled_text`, mentioning them) — and once the provider
is done with it (``cancelled → failed``) its delivery charges what the provider reported and
shows nothing more. A job whose request the provider refused as invalid is recorded
``create_failed`` without its progress message, which is taken off the channel the same way
(:meth:`JobMessages.mark_refused`: its user is told why privately).

Used buttons (:class:`ButtonMarks`): a pressed button is remembered on the job it was pressed on and
drawn primary (as Midjourney marks them), and a second press is answered with a link to the result.
A derivative taken over from a process that died before it marked the press gets it marked then.
A press can land after the result is written and before the job is recorded ``posted`` (its
mark cannot be drawn yet): the move to ``posted`` only adds its own keys to the stored result,
keeping such marks, and answers the stored result as moved, so the delivery redraws the buttons
when they gained marks since it read the job (in the common case, no statement more).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from bot.features.jobs import wording
from bot.features.jobs.experience import Experience
from bot.features.jobs.held_images import RESULTS_AT_MOST_HELD, HeldImages
from bot.features.jobs.params import (
    ImageParams,
    JobResult,
    adding_pressed,
    job_language,
    result_with,
)
from bot.features.jobs.result_messages import ResultMessages, drawn_marks, pressed_actions
from bot.features.jobs.tracking.retry import DeliveryRetry
from bot.features.jobs.tracking.watch import JobWatch
from bot.features.jobs.wording import ELAPSED_STEP, Position
from bot.kernel import (
    N_,
    Button,
    DeletesMessages,
    Event,
    FindsKeyedPosts,
    MediaFetcher,
    MediaHost,
    MessageGone,
    MessageRef,
    OutMessage,
    Place,
    RateLimited,
    ShowsActivity,
    SurfaceError,
    _,
    metrics,
    speaking,
)
from bot.outbox import Activity, Delete, Edit, Outbox, Post, WritePolicy, WriteSkipped
from storage import (
    ACTIVE_STATUSES,
    TERMINAL_STATUSES,
    DeliveryClaims,
    Job,
    JobMessage,
    JobMessageKind,
    JobStatus,
    JobWriter,
    MessageLinks,
    StorageError,
    forgotten,
)

log = logging.getLogger(__name__)


class TakenOver(Exception):
    """The job changed hands (or left ``creating``) before its progress message was linked:
    the process that holds it now settles it, and this start sends nothing."""


FINAL_MEMORY = 10_000
"""How many jobs with final messages are remembered: far more than finish while one poll's
answer is on its way."""
CANCEL_ACTION = "cancel"
# Translators: what is left of a job's progress message, where the platform cannot delete it,
# when the job's requester deleted their data while it ran.
ERASED_TEXT = N_("🗑️ Deleted at the requester's request.")
# Translators: the button under a running job's progress message that cancels it (hides it).
CANCEL_LABEL = N_("❌ Cancel")


def place_of(job: Job) -> Place:
    """Where a job's messages go."""
    return Place(
        job.platform,
        job.workspace_id,
        job.channel_id,
        job.thread_id,
        job.is_dm,
    )


def progress_key(job: Job) -> str:
    """The key of ``job``'s progress message."""
    return f"{job.id}.progress"


def cancel_buttons(job: Job) -> tuple[tuple[Button, ...], ...]:
    """The ❌ Cancel button of a job in flight."""
    return ((Button(_(CANCEL_LABEL), CANCEL_ACTION, job.id, "danger"),),)


class UnrecordedDelivery(Exception):
    """A delivery claim whose outcome was never recorded (the write failed)."""

    def __str__(self) -> str:
        return "its delivery stopped before its outcome was recorded"


def once(message: OutMessage, job: Job, kind: str) -> OutMessage:
    """``message`` keyed as ``job``'s one message of ``kind`` (a claimed job), marked as
    possibly posted already when an earlier claim did not record its outcome."""
    return replace(message, key=f"{job.id}.{kind}", may_exist=job.post_claims > 1)


class ButtonMarks:
    """Marks pressed buttons and finds links to job messages."""

    def __init__(self, store: JobWriter, outbox: Outbox, results: ResultMessages) -> None:
        self._store = store
        self._outbox = outbox
        self._results = results
        self._redrawing: dict[str, tuple[asyncio.Lock, int]] = {}
        """Job id → the lock its redraws take turns with, and how many hold or await it."""

    async def mark_pressed(self, parent: Job, action: str) -> None:
        """Remember that ``action`` of ``parent`` started a derivative and show its button
        pressed on ``parent``'s result (best effort: never raises)."""
        try:
            if action in pressed_actions(parent):
                return
            current = await self._store.change_job_result(parent.id, adding_pressed(action))
            if current is not None:
                await self.redraw(current)
        except Exception as error:
            log.warning("could not mark %s pressed on job %s: %r", action, parent.id, error)

    async def show_press_of(self, job: Job) -> None:
        """Show the press that started ``job`` (a derivative) on its parent's result, as its
        start does once the job is under way: for a job taken over from a process that ended
        between the two (``kill -9`` right after a press). Nothing for a job that certainly
        started nothing, or that is no derivative; best effort: never raises."""
        if job.parent_job_id is None or job.action is None or job.status == "create_failed":
            return
        action = job.action.partition(":")[0].partition("#")[0]
        try:
            parent = await self._store.get_job(job.parent_job_id)
        except Exception as error:
            log.warning("could not read the parent of job %s: %r", job.id, error)
            return
        if parent is not None:
            await self.mark_pressed(parent, action)

    async def catch_up(self, shown: Job, recorded: Job) -> None:
        """Redraw the result of ``recorded`` (``shown`` with the status, result message and
        stored result its move to ``posted`` left) when buttons were marked on it (pressed,
        refused) after ``shown`` was read, which its message was written from: a press in
        between found the job not yet posted and could not redraw."""
        if drawn_marks(recorded) != drawn_marks(shown):
            await self.redraw(recorded)

    async def redraw(self, job: Job) -> None:
        """Show ``job``'s current buttons (pressed ones marked, refused ones disabled) on its
        posted result; best effort: a failure is logged. Redraws of one job take turns, each
        reading the stored job when its turn comes, so the last one shows every mark."""
        if job.status != "posted" or job.result_message_id is None:
            return
        place = place_of(job)
        lock, users = self._redrawing.get(job.id, (asyncio.Lock(), 0))
        self._redrawing[job.id] = (lock, users + 1)
        try:
            ref = MessageRef(place, job.result_message_id)
            async with lock:
                latest = await self._store.get_job(job.id) or job
                with speaking(job_language(latest)):
                    edit = Edit(ref, self._results.marked(latest))
                    await self._outbox.write(place, edit, WritePolicy.MUST_DELIVER)
        except Exception as error:
            log.warning("could not redraw the buttons of job %s: %r", job.id, error)
        finally:
            lock, users = self._redrawing[job.id]
            if users > 1:
                self._redrawing[job.id] = (lock, users - 1)
            else:
                del self._redrawing[job.id]

    async def link(self, job: Job) -> str | None:
        """An address that opens ``job``'s result (or progress) message, where the platform
        gives one (a surface's optional ``link``)."""
        message_id = job.result_message_id or job.progress_message_id
        if message_id is None:
            return None
        try:
            return await self._outbox.link(MessageRef(place_of(job), message_id))
        except (SurfaceError, RateLimited) as error:
            log.info("no link to the message of job %s: %s", job.id, error)
            return None


@dataclass(frozen=True)
class JobMessagesStorage:
    """What job messages use: job reads and moves, delivery claims, message links."""

    jobs: JobWriter
    claims: DeliveryClaims
    message_links: MessageLinks


class JobMessages:
    """Posts each job's progress message and keeps it current, then makes it show the job's
    outcome — the result or the failure report — exactly once (see the module docstring).
    ``clock`` is the store's (``store.clock``): delivery claims and retries are stamped and
    a job's age measured on it."""

    def __init__(
        self,
        store: JobMessagesStorage,
        outbox: Outbox,
        media: MediaFetcher,
        watch: JobWatch,
        *,
        clock: Callable[[], float],
        retry: DeliveryRetry | None = None,
        experience: Experience | None = None,
        hosted: MediaHost | None = None,
    ) -> None:
        self._store = store
        self._outbox = outbox
        self._hosted = hosted
        """Where genbot hosted reference images (to tell whether the provider read them)."""
        self._platforms = outbox.platforms()
        """The platforms the outbox writes to (its surfaces are fixed when it is made)."""
        self._drawing_shown = frozenset(p for p in self._platforms if outbox.can(p, ShowsActivity))
        """The platforms that show a running job's "drawing…" activity (elsewhere it is not
        written: it would make no call)."""
        self._profiles = {platform: outbox.profile(platform) for platform in self._platforms}
        """What each of those platforms allows (a surface's profile is fixed with it)."""
        self._watch = watch
        self._clock = clock
        self.experience = experience or Experience()
        """How long jobs take here (the estimates), learned from every result posted."""
        self.progress_step: float = ELAPSED_STEP
        """The progress time's step in seconds (the ticker's interval)."""
        self.positions: dict[str, Position] = {}
        """Each job's place among its requester's running jobs (kept by the progress ticker)."""
        self._shown: dict[str, str] = {}
        self._edited_at: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._final: OrderedDict[str, None] = OrderedDict()
        self.retry = retry or DeliveryRetry()
        self.results = ResultMessages(self._profiles, media)
        self.held_images = HeldImages(RESULTS_AT_MOST_HELD * media.max_bytes)
        """The result images deliveries hold until their writes return, bounded in bytes."""
        self.marks = ButtonMarks(store.jobs, outbox, self.results)
        self.recording: set[str] = set()
        """The jobs whose delivery has shown their outcome and records it: from the move on
        they are no longer in flight, so a heartbeat that no longer finds them held must not
        stop the delivery as taken over (a takeover's fence refuses the move anyway)."""

    # Writing through the outbox -----------------------------------------------------------------

    async def send(
        self, place: Place, message: OutMessage, *, policy: WritePolicy, origin: Event | None = None
    ) -> MessageRef:
        """Post ``message`` as ``policy`` says."""
        return await self._outbox.write(place, Post(message, origin), policy)

    async def edit(
        self,
        job: Job,
        text: str,
        *,
        policy: WritePolicy,
        buttons: tuple[tuple[Button, ...], ...] = (),
    ) -> bool:
        """Set the progress message of ``job`` to ``text`` (and ``buttons``) as ``policy``
        says; skipped when it already shows it (or ``SKIP_IF_BUSY`` skipped it). True if
        written."""
        async with self._lock(job.id):
            message = OutMessage(text=text, buttons=buttons, card=True)
            return await self._edit(job, message, policy=policy)

    def _lock(self, job_id: str) -> asyncio.Lock:
        return self._locks.setdefault(job_id, asyncio.Lock())

    async def _edit(
        self,
        job: Job,
        message: OutMessage,
        *,
        policy: WritePolicy,
        wait: float | None = None,
        fenced: bool = False,
    ) -> bool:
        """Edit ``job``'s progress message; ``fenced``: only while ``job``'s lease is still the
        job's and the job is in flight, checked as the edit is made (a process that lost the
        job since it read it, or whose job another process settled, writes nothing)."""
        if job.progress_message_id is None or self._shown.get(job.id) == message.text:
            return False
        place = place_of(job)
        if place.platform not in self._platforms:
            return False
        ref = MessageRef(place, job.progress_message_id)
        last = self._edited_at.get(job.id, -math.inf)
        if fenced and not await self._still_running_under(job):
            return False
        try:
            await self._outbox.write(place, Edit(ref, message), policy, wait=wait, last_served=last)
        except (WriteSkipped, RateLimited):
            return False
        except MessageGone:
            log.info("the progress message of job %s is gone; it is not edited again", job.id)
            self._mark_final(job.id)
            return False
        except (SurfaceError, KeyError) as error:
            log.warning("could not edit the progress message of job %s: %s", job.id, error)
            return False
        self._shown[job.id] = message.text
        self._edited_at[job.id] = self._outbox.pacer.clock.monotonic()
        return True

    async def _still_running_under(self, job: Job) -> bool:
        """Whether ``job`` is still in flight under the lease ``job`` shows (not when that
        cannot be read). A job read while the provider was working on it is no longer in
        flight once the provider is done with it: its result or report is on its way and
        replaces the progress message (an edit then would only take a write from the
        results)."""
        try:
            current = await self._store.jobs.lease_and_status(job.id)
        except StorageError as error:
            log.info("progress of job %s not shown: %s", job.id, error)
            return False
        if current is None:
            return False
        lease, status = current
        done_since = job.status in ACTIVE_STATUSES and status not in ACTIVE_STATUSES
        return (
            lease == job.lease
            and status not in TERMINAL_STATUSES
            and status != "cancelled"
            and not done_since
            and job.id not in self._final
        )

    def forget(self, job_id: str) -> None:
        """Drop what is remembered about a job whose messages are final, and remember (for a
        while) that they are: a late progress update about it changes nothing."""
        self._shown.pop(job_id, None)
        self._edited_at.pop(job_id, None)
        self._locks.pop(job_id, None)
        self.positions.pop(job_id, None)
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
            await self.edit(job, text, policy=WritePolicy.MUST_DELIVER)
        except Exception:
            log.exception("could not show the outcome of job %s", job.id)
        await self._end_drawing(job)

    async def _end_drawing(self, job: Job) -> None:
        if job.platform in self._drawing_shown:
            drawn = Activity("drawing", ended=True)
            await self._outbox.write(place_of(job), drawn, WritePolicy.BEST_EFFORT)

    # Progress ---------------------------------------------------------------------------------

    def progress_message(self, job: Job, status: str | None = None) -> OutMessage:
        """What ``job``'s progress message shows now: its status in words, the time since it
        started, the time left and its place among the requester's jobs, and ❌ Cancel."""
        elapsed = max(self._clock() - job.created_at, 0.0)
        position = self.positions.get(job.id)
        step = self.progress_step
        text = wording.progress_text(
            job, status or job.status, elapsed, self.experience.estimates, position, step
        )
        return OutMessage(text=text, buttons=cancel_buttons(job), card=True)

    async def post_progress(self, job: Job, origin: Event | None) -> Job:
        """Post the first progress message of a new job and link it (the job row is already
        committed, so the message is recoverable after a restart); the job as the link's move
        left it (read by the move's own statement). :class:`TakenOver` when the job is no
        longer this start's (another process took it over while the message was posted, and
        settles it as never sent): it must not be sent then."""
        with speaking(job_language(job)):
            place = origin.place if origin is not None else place_of(job)
            message = replace(self.progress_message(job), key=progress_key(job))
            ref = await self.send(place, message, policy=WritePolicy.MUST_DELIVER, origin=origin)
            link = JobMessage(job.platform, job.channel_id, ref.message_id, job.id, "progress")
            linked = await self._store.jobs.transition_answering(
                job.id,
                "creating",
                "creating",
                progress_message_id=ref.message_id,
                links=(link,),
                fence=job.lease,
            )
            self._shown[job.id] = message.text
            if linked is None:
                raise TakenOver(job.id)
            if place.platform in self._drawing_shown:
                drawing = Activity("drawing", origin)
                await self._outbox.write(place, drawing, WritePolicy.BEST_EFFORT)
        return linked

    async def recover_progress(self, job: Job) -> Job:
        """Link the progress message of a job whose process died between posting it and
        linking it, when the platform's surface can find it by its key (``posted``); the job
        as the link's move left it (read by the move's own statement), or, when the job had
        moved on from the status ``job`` shows, linked whatever its status and read again."""
        if job.progress_message_id is not None or not self._outbox.can(
            job.platform, FindsKeyedPosts
        ):
            return job
        try:
            ref = await self._outbox.posted(place_of(job), progress_key(job))
        except (SurfaceError, RateLimited) as error:
            log.warning("could not look for the progress message of job %s: %s", job.id, error)
            return job
        if ref is None:
            return job
        link = JobMessage(job.platform, job.channel_id, ref.message_id, job.id, "progress")
        linked = await self._store.jobs.transition_answering(
            job.id, job.status, job.status, progress_message_id=ref.message_id, links=(link,)
        )
        if linked is not None:
            return linked
        await self._store.jobs.update_job(job.id, progress_message_id=ref.message_id)
        await self._store.message_links.link_message(
            job.platform, job.channel_id, ref.message_id, job.id, "progress"
        )
        return await self._store.jobs.get_job(job.id) or job

    async def show_progress(
        self, job: Job, status: str | None = None, *, wait: float | None = None
    ) -> bool:
        """Edit the progress message for ``status`` (default: the job's), when its text changes
        and the job is still in flight (a late answer about a job whose messages are final
        changes nothing). Skipped when the outbox finds no room within ``wait`` seconds."""
        if job.id in self._final or job.status in TERMINAL_STATUSES or job.status == "cancelled":
            return False
        with speaking(job_language(job)):
            message = self.progress_message(job, status)
            if self._shown.get(job.id) == message.text:
                return False
            async with self._lock(job.id):
                if job.id in self._final:
                    return False
                return await self._edit(
                    job, message, policy=WritePolicy.SKIP_IF_BUSY, wait=wait, fenced=True
                )

    async def mark_not_started(self, job: Job, reason: str) -> Job:
        """Move a ``creating`` job that certainly started nothing at the provider to
        ``create_failed`` and say why in its progress message (found by its key when it was
        posted but never linked). ``reason``: a catalog text (said here, in the job's
        language) or a sentence already said. The job as the move left it (read by the move's
        own statement), or as stored when it did not move (read again)."""
        with speaking(job_language(job)):
            reason = _(reason)
            moved = await self._store.jobs.transition_answering(
                job.id, "creating", "create_failed", error=reason, fence=job.lease
            )
            current = moved or await self._store.jobs.get_job(job.id) or job
            current = await self.recover_progress(current)
            if moved is not None:
                metrics.JOBS_FAILED.labels(job.type).inc()
                await self._show_outcome(current, wording.create_failed_text(current, reason))
                self.forget(job.id)
        self._watch.touch(job.id)
        return current

    async def mark_refused(self, job: Job, reason: str) -> Job:
        """Move a ``creating`` job whose request the provider refused as invalid to
        ``create_failed`` with ``reason`` (as :meth:`mark_not_started` does) and take its
        progress message off the channel: the refusal is its requester's to read, privately
        (:class:`~bot.features.jobs.starter.JobStarter` raises it). The move records that the
        job has no progress message any more, so a command handled again is refused privately
        too; the message is then deleted (where the surface can, else it says the job did not
        start, without the reason). The job as for :meth:`mark_not_started`."""
        with speaking(job_language(job)):
            reason = _(reason)
            moved = await self._store.jobs.transition_answering(
                job.id,
                "creating",
                "create_failed",
                error=reason,
                progress_message_id=None,
                fence=job.lease,
            )
            current = moved or await self._store.jobs.get_job(job.id) or job
            if moved is not None:
                metrics.JOBS_FAILED.labels(job.type).inc()
                await self._take_off(job, wording.not_started_text(job))
                self.forget(job.id)
        self._watch.touch(job.id)
        return current

    async def mark_unconfirmed(self, job: Job, reason: str) -> Job:
        """Move a ``creating`` job the provider may have received to ``unknown`` and tell the
        user (see :func:`bot.features.jobs.wording.unconfirmed_text`). ``reason`` as for
        :meth:`mark_not_started`; the job as for it."""
        with speaking(job_language(job)):
            reason = _(reason)
            moved = await self._store.jobs.transition_answering(
                job.id, "creating", "unknown", error=reason, fence=job.lease
            )
            current = moved or await self._store.jobs.get_job(job.id) or job
            if moved is not None:
                text = wording.unconfirmed_text(current, reason)
                buttons = cancel_buttons(current)
                await self.edit(current, text, policy=WritePolicy.MUST_DELIVER, buttons=buttons)
        self._watch.touch(job.id)
        return current

    # Results and failures ---------------------------------------------------------------------

    async def deliver(self, job_id: str) -> float | None:
        """Post the result of a finished job or report a failed one, exactly once, when its
        next attempt is due. Returns when to try again if this attempt failed, else None."""
        job = await self._store.claims.claim_delivery(job_id, self._platforms, self._clock())
        if job is None:
            return None
        try:
            with speaking(job_language(job)):
                if forgotten(job.requester_id):
                    await self._erase(job)
                    return None
                if job.status == "posting":
                    return await self._post_result(job)
                return await self._report_failure(job)
        finally:
            self.recording.discard(job_id)

    async def _erase(self, job: Job) -> None:
        """Erase a job whose requester was forgotten while it ran (``/forget-me``, which named
        it by a pseudonym): nothing is shown, its progress message is taken off the channel
        (where it cannot be deleted, it says only that it was deleted), and its row goes, its
        charge kept anonymous (:meth:`DeliveryClaims.erase`)."""
        await self._take_off(job, _(ERASED_TEXT))
        await self._store.claims.erase(job.id)
        self._watch.touch(job.id)
        self.forget(job.id)

    async def _post_result(self, job: Job) -> float | None:
        stored = job.result
        try:
            job = await self._references_read(job)
            ref, size = await self._show_result(job)
        except Exception as error:
            return await self._retry_later(job, "posting", "finished", error)
        noted = {k: v for k, v in result_with(job, size=size).items() if stored.get(k) != v}
        await self._finish(job, "posting", "posted", ref, "result", noted=noted)
        self.experience.estimates.observe(job)
        if job.family == "diffusion":
            self.experience.models.observe(job)
        self.forget(job.id)
        return None

    async def _show_result(self, job: Job) -> tuple[MessageRef, tuple[int, int] | None]:
        """Download ``job``'s result within the room for held images and show it; returns the
        message that shows it and the image's size. The images are let go with their room."""
        link_instead = job.delivery_attempts + 1 >= self.retry.image_attempts
        async with self.held_images.room(self.results.most_bytes(job)) as keep:
            message, size = await self.results.result(job, link_instead=link_instead)
            keep(sum(len(image.data) for image in message.images))
            return await self._show(job, message, "result"), size

    async def _references_read(self, job: Job) -> Job:
        """``job`` with how many of the reference images genbot hosted for it the provider
        never fetched (``references_unread``, shown with the result), when it had any."""
        hosted = ImageParams.of(job).references if job.type == "imagine" else ()
        if not hosted or self._hosted is None or "references_unread" in job.result:
            return job
        unread = await self._hosted.unread(hosted)
        return replace(job, result={**job.result, "references_unread": unread})

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
        profile = self._profiles[job.platform]
        message = replace(message, card=True)
        progress = MessageRef(place, job.progress_message_id) if job.progress_message_id else None
        self._mark_final(job.id)
        async with self._lock(job.id):
            if progress is not None and (profile.edits_add_images or not message.images):
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

    async def hide_cancelled(self, job: Job) -> None:
        """Take a cancelled job off the channel: its progress message is deleted (where the
        surface can, else it says cancelled, without buttons), and no progress update shows
        it again. A job an admin cancelled for its requester is not taken off: its progress
        message tells the requester so instead (posted anew when it is gone), whichever process
        does this — the same words each time. One whose requester deleted their data
        (``/forget-me``) is taken off as its delivery would (:meth:`_erase`), showing nothing
        of it. Its status is left as it is; never raises."""
        if forgotten(job.requester_id):
            with speaking(job_language(job)):
                erased = _(ERASED_TEXT)
            await self._take_off(job, erased)
            return
        if JobResult.of(job).cancelled_by_admin and job.platform in self._platforms:
            self._mark_final(job.id)
            await self._tell_cancelled(job)
            await self._end_drawing(job)
            return
        await self._take_off(job, wording.cancelled_text(job))

    async def _take_off(self, job: Job, collapsed: str) -> None:
        """Take ``job``'s progress message off the channel: deleted where the surface can,
        else ``collapsed`` without buttons; no progress update shows it again. Never raises."""
        self._mark_final(job.id)
        if job.progress_message_id is not None and job.platform in self._platforms:
            ref = MessageRef(place_of(job), job.progress_message_id)
            async with self._lock(job.id):
                await self._retire(job, ref, collapsed)
        await self._end_drawing(job)

    async def _tell_cancelled(self, job: Job) -> None:
        """Make ``job``'s progress message tell its requester an admin cancelled it; never
        raises."""
        try:
            with speaking(job_language(job)):
                text = wording.admin_cancelled_text(job)
                note = OutMessage(text=text, mention_user_id=job.requester_id)
                await self._show(job, note, "cancelled")
        except Exception as error:
            log.warning("could not tell job %s's requester it was cancelled: %r", job.id, error)

    async def _hide(self, job: Job) -> float | None:
        """End a cancelled job, showing nothing but its message taken off the channel (unless
        this process took it off when it was cancelled)."""
        if job.id not in self._final:
            await self.hide_cancelled(job)
        await self._store.jobs.transition(job.id, "reporting", "failed_posted", fence=job.lease)
        self._watch.touch(job.id)
        self.forget(job.id)
        return None

    async def _finish(
        self,
        job: Job,
        claimed: JobStatus,
        done: JobStatus,
        ref: MessageRef,
        kind: JobMessageKind,
        *,
        noted: Mapping[str, Any] | None = None,
    ) -> None:
        """Record ``job`` ``done`` (from ``claimed``) with its message ``ref``, ``noted`` set in
        its result (nothing when it was taken over meanwhile). A result's move answers the
        stored result it left: the buttons are redrawn when marked since ``job`` was read
        (:meth:`ButtonMarks.catch_up`); a failure report's answers only whether it moved."""
        link = JobMessage(job.platform, job.channel_id, ref.message_id, job.id, kind)
        move: dict[str, Any] = {
            "result_message_id": ref.message_id,
            "links": [link],
            "fence": job.lease,
        }
        self.recording.add(job.id)
        result: dict[str, Any] | None = None
        if done == "posted":
            result = await self._store.jobs.transition_noting(
                job.id, claimed, done, noted=noted, **move
            )
            moved = result is not None
        else:
            moved = await self._store.jobs.transition(job.id, claimed, done, **move)
        self._watch.touch(job.id)
        if not moved:
            log.info("job %s was taken over while it was delivered; its owner records it", job.id)
            return
        await self._end_drawing(job)
        if done == "posted":
            metrics.JOBS_COMPLETED.labels(job.type).inc()
            if job.finished_at is not None:
                waited = max(self._clock() - job.finished_at, 0.0)
                metrics.FINISHED_TO_POSTED.labels(job.platform).observe(waited)
        else:
            metrics.JOBS_FAILED.labels(job.type).inc()
        if result is not None:
            recorded = replace(job, status=done, result_message_id=ref.message_id, result=result)
            await self.marks.catch_up(job, recorded)

    async def _retry_later(
        self, job: Job, claimed: JobStatus, release: JobStatus, error: Exception
    ) -> float | None:
        failures = job.delivery_attempts + 1
        delay = self.retry.delay(failures)
        log.warning("delivering job %s failed (attempt %d): %r", job.id, failures, error)
        if delay is not None:
            retry_at = self._clock() + delay
            await self._store.jobs.transition(
                job.id,
                claimed,
                release,
                delivery_attempts=failures,
                next_poll_at=retry_at,
                fence=job.lease,
            )
            return retry_at
        await self._show_outcome(job, wording.not_posted_text(job))
        await self._store.jobs.transition(
            job.id,
            claimed,
            "failed_posted",
            delivery_attempts=failures,
            error=f"not posted: {error}",
            fence=job.lease,
        )
        metrics.JOBS_FAILED.labels(job.type).inc()
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
        with speaking(job_language(job)):
            await self._retry_later(job, job.status, release, UnrecordedDelivery())
        return True

    async def redraw_buttons(self, job: Job) -> None:
        """Show ``job``'s current buttons on its posted result (e.g. one the provider refused,
        now disabled); best effort: a failure is logged."""
        await self.marks.redraw(job)
