"""❌ Cancel under a job's progress message.

The provider has no way to cancel a job, so Cancel means: genbot stops following the job and
hides it (its progress message is deleted), and tells the user that the service may still
finish and charge it. The job moves to ``failed`` with ``result["cancelled"]``; delivery then
hides it instead of reporting a failure. Only the requester (or an admin) may cancel; an admin's
cancel of someone else's job is recorded in the audit log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from bot.features.audit.trail import AuditTrail
from bot.features.jobs import wording
from bot.features.jobs.messages import CANCEL_ACTION, JobMessages
from bot.features.jobs.params import job_language, result_with
from bot.features.jobs.tracking.watch import JobWatch
from bot.kernel import (
    ButtonPress,
    Command,
    ModalSubmit,
    OptionValue,
    Place,
    User,
    UserError,
    _,
    speaking,
)
from bot.outbox import Notice, Outbox, WritePolicy
from bot.refs import JobReferent, RefKind, Work
from storage import IN_FLIGHT_STATUSES, Job, JobStatus, JobWriter

CANCELLABLE: frozenset[JobStatus] = IN_FLIGHT_STATUSES | {"unknown"}


class JobCancel:
    """The Cancel button (a feature of the core)."""

    commands: frozenset[str] = frozenset()
    actions: ClassVar[Mapping[str, RefKind]] = {CANCEL_ACTION: RefKind.JOB}
    work: ClassVar[Mapping[str, Work]] = {CANCEL_ACTION: Work.FREE}

    def __init__(
        self,
        store: JobWriter,
        outbox: Outbox,
        delivery: JobMessages,
        watch: JobWatch,
        audit: AuditTrail,
    ) -> None:
        self._store = store
        self._outbox = outbox
        self._delivery = delivery
        self._watch = watch
        self._audit = audit

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        raise UserError(_("genbot has no such command."))

    async def on_modal(self, event: ModalSubmit, referent: JobReferent) -> None:
        raise UserError(_("This form is no longer supported."))

    async def on_button(self, event: ButtonPress, referent: JobReferent) -> None:
        """Stop following the job and hide it, then say what that means for credits."""
        await self.cancel(event.user, referent.job, event.place)
        await self._outbox.write(
            event.place, Notice(event, _(wording.CANCELLED_NOTE)), WritePolicy.NOW
        )

    async def cancel(self, user: User, job: Job, place: Place) -> None:
        """Cancel ``job`` for ``user`` (its requester or an admin; :class:`UserError` for
        anyone else, or a job that cannot be cancelled now), acting in ``place``. The admin
        page calls this too."""
        if not (user.is_admin or user.id == job.requester_id):
            raise UserError(_("Only the person who started this job can cancel it."))
        if job.status == "creating":
            raise UserError(_("It is still being sent to the service; try again in a moment."))
        if job.status not in CANCELLABLE:
            raise UserError(_("This job has already finished."))
        with speaking(job_language(job)):
            cancelled = _("Cancelled by {user}.", user=user.name or user.id)
        moved = await self._store.transition(
            job.id,
            CANCELLABLE,
            "failed",
            error=cancelled,
            result=result_with(job, cancelled=True),
            next_poll_at=None,
        )
        if not moved:
            raise UserError(_("This job has just finished; its result is on its way."))
        if user.id != job.requester_id:
            await self._audit.record(
                "job.cancelled",
                place,
                user.id,
                job.id,
                before={"status": job.status, "requester_id": job.requester_id},
                after={"status": "failed", "cancelled": True},
            )
        self._watch.touch(job.id)
        await self._delivery.deliver(job.id)
