"""Used buttons: a pressed button is remembered on the job it was pressed on and drawn primary
(as Midjourney marks them), and a second press is answered with a link to the result."""

from __future__ import annotations

import asyncio
import logging

from bot.features.jobs.result_messages import ResultMessages, pressed_actions
from bot.kernel import MessageRef, Place, RateLimited, SurfaceError
from bot.outbox import Edit, Outbox, WritePolicy
from storage import Job, JobWriter, adding_pressed

log = logging.getLogger(__name__)


def place_of(job: Job) -> Place:
    """Where a job's messages go."""
    return Place(
        job.platform,
        job.workspace_id,
        job.channel_id,
        job.thread_id,
        job.is_dm,
    )


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
