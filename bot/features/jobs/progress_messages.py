"""A job's progress message: posted (keyed ``<job id>.progress``) and linked as the job starts,
then kept current — its status in words, the time since it started and the time left, its place
among the requester's jobs, and ❌ Cancel.

Every write goes through the process's :class:`~bot.outbox.Outbox` (see
:mod:`bot.features.jobs.messages`): a progress edit is skipped when there is no room right now (the
next poll brings a newer one).

Progress edits are serialized per job with the final edits and never made once the job's
messages are final (remembered in memory: deliveries run in this process), so a late poll
answer never overwrites a finished job's result. A progress update is also made only while the
job is still in flight under the lease it was read with (checked as the edit is made, before it
waits for room): a process that lost the job (taken over, or given back to a joining process)
does not overwrite what its new owner shows. :class:`bot.features.jobs.messages.Delivery` builds on
this to make the same message show the job's outcome.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from bot.features.jobs import wording
from bot.features.jobs.experience import Experience
from bot.features.jobs.marks import place_of
from bot.features.jobs.progress import ELAPSED_STEP, Position
from bot.features.jobs.tracking.watch import JobWatch
from bot.kernel import (
    Button,
    Event,
    FindsKeyedPosts,
    MessageGone,
    MessageRef,
    OutMessage,
    Place,
    RateLimited,
    SurfaceError,
    metrics,
)
from bot.outbox import Activity, Edit, Outbox, Post, WritePolicy, WriteSkipped
from storage import TERMINAL_STATUSES, Job, JobMessage, JobWriter, MessageLinks, StorageError

log = logging.getLogger(__name__)


class TakenOver(Exception):
    """The job changed hands (or left ``creating``) before its progress message was linked:
    the process that holds it now settles it, and this start sends nothing."""


FINAL_MEMORY = 10_000
"""How many jobs with final messages are remembered: far more than finish while one poll's
answer is on its way."""
CANCEL_ACTION = "cancel"
CANCEL_LABEL = "❌ Cancel"


def progress_key(job: Job) -> str:
    """The key of ``job``'s progress message."""
    return f"{job.id}.progress"


def cancel_buttons(job: Job) -> tuple[tuple[Button, ...], ...]:
    """The ❌ Cancel button of a job in flight."""
    return ((Button(CANCEL_LABEL, CANCEL_ACTION, job.id, "danger"),),)


class ProgressStorage(JobWriter, MessageLinks, Protocol):
    """What progress messages use: job reads and moves, message links."""


class ProgressMessages:
    """Posts and keeps current the progress messages of jobs on their platform's surface."""

    def __init__(
        self,
        store: ProgressStorage,
        outbox: Outbox,
        watch: JobWatch,
        *,
        clock: Callable[[], float] = time.time,
        experience: Experience | None = None,
    ) -> None:
        self._store = store
        self._outbox = outbox
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
        if place.platform not in self._outbox:
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
        cannot be read)."""
        try:
            current = await self._store.get_job(job.id)
        except StorageError as error:
            log.info("progress of job %s not shown: %s", job.id, error)
            return False
        return (
            current is not None
            and current.lease == job.lease
            and current.status not in TERMINAL_STATUSES
            and current.id not in self._final
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
        if job.platform in self._outbox:
            drawn = Activity("drawing", ended=True)
            await self._outbox.write(place_of(job), drawn, WritePolicy.BEST_EFFORT)

    # Progress ---------------------------------------------------------------------------------

    def progress_message(self, job: Job, status: str | None = None) -> OutMessage:
        """What ``job``'s progress message shows now: its status in words, the time since it
        started, the time left and its place among the requester's jobs, and ❌ Cancel."""
        elapsed = max(self._clock() - job.created_at, 0.0)
        usual = self.experience.estimates.usual(job)
        position = self.positions.get(job.id)
        step = self.progress_step
        text = wording.progress_text(job, status or job.status, elapsed, usual, position, step)
        return OutMessage(text=text, buttons=cancel_buttons(job), card=True)

    async def post_progress(self, job: Job, origin: Event | None) -> Job:
        """Post the first progress message of a new job and link it (the job row is already
        committed, so the message is recoverable after a restart). :class:`TakenOver` when
        the job is no longer this start's (another process took it over while the message was
        posted, and settles it as never sent): it must not be sent then."""
        place = origin.place if origin is not None else place_of(job)
        message = replace(self.progress_message(job), key=progress_key(job))
        ref = await self.send(place, message, policy=WritePolicy.MUST_DELIVER, origin=origin)
        link = JobMessage(job.platform, job.channel_id, ref.message_id, job.id, "progress")
        linked = await self._store.transition(
            job.id,
            "creating",
            "creating",
            progress_message_id=ref.message_id,
            links=(link,),
            fence=job.lease,
        )
        self._shown[job.id] = message.text
        if not linked:
            raise TakenOver(job.id)
        await self._outbox.write(place, Activity("drawing", origin), WritePolicy.BEST_EFFORT)
        refreshed = await self._store.get_job(job.id)
        return refreshed or job

    async def recover_progress(self, job: Job) -> Job:
        """Link the progress message of a job whose process died between posting it and
        linking it, when the platform's surface can find it by its key (``posted``)."""
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
        await self._store.update_job(job.id, progress_message_id=ref.message_id)
        await self._store.link_message(
            job.platform, job.channel_id, ref.message_id, job.id, "progress"
        )
        return await self._store.get_job(job.id) or job

    async def show_progress(
        self, job: Job, status: str | None = None, *, wait: float | None = None
    ) -> bool:
        """Edit the progress message for ``status`` (default: the job's), when its text changes
        and the job is still in flight (a late answer about a job whose messages are final
        changes nothing). Skipped when the outbox finds no room within ``wait`` seconds."""
        if job.id in self._final or job.status in TERMINAL_STATUSES:
            return False
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
        posted but never linked)."""
        moved = await self._store.transition(
            job.id, "creating", "create_failed", error=reason, fence=job.lease
        )
        current = await self.recover_progress(await self._store.get_job(job.id) or job)
        if moved:
            metrics.job_failed(job.type)
            await self._show_outcome(current, wording.create_failed_text(current, reason))
            self.forget(job.id)
        self._watch.touch(job.id)
        return current

    async def mark_unconfirmed(self, job: Job, reason: str) -> Job:
        """Move a ``creating`` job the provider may have received to ``unknown`` and tell the
        user (see :func:`bot.features.jobs.wording.unconfirmed_text`)."""
        moved = await self._store.transition(
            job.id, "creating", "unknown", error=reason, fence=job.lease
        )
        current = await self._store.get_job(job.id) or job
        if moved:
            text = wording.unconfirmed_text(current, reason)
            await self.edit(
                current, text, policy=WritePolicy.MUST_DELIVER, buttons=cancel_buttons(current)
            )
        self._watch.touch(job.id)
        return current
