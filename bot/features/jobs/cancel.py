"""❌ Cancel under a job's progress message.

The provider has no way to cancel a job: its task runs to its end and is charged. So Cancel
means: the job stops mattering to the user at once (its progress message is deleted, or says
cancelled without buttons where it cannot be; no result is ever posted), but a job the provider
has (or may have) moves to ``cancelled``: it is followed quietly until the provider is done, and
the credits the provider reports are charged to the user like a finished job's (its delivery then
ends it, showing nothing). One the provider confirmed keeps its place under the user's
jobs-at-once cap until then; one it never confirmed (``unknown``) gives its place back at once
(:data:`storage.queries.admission.COUNTS_TOWARD_CAP`). Only the
requester (or an admin) may cancel; an admin's cancel of someone else's job is recorded in the
audit log, and its requester is told in place of the progress message (not deleted then): an
admin cancelled it, and the service may still charge it
(:func:`bot.features.jobs.wording.admin_cancelled_text`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
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
from storage import IN_FLIGHT_STATUSES, Job, JobStatus, JobWriter, forgotten

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
        """Hide the job (followed quietly until the provider is done), then say what that
        means for credits and the user's cap
        (:func:`~bot.features.jobs.wording.cancelled_note`)."""
        await self.cancel(event.user, referent.job, event.place)
        await self._outbox.write(
            event.place, Notice(event, wording.cancelled_note(referent.job)), WritePolicy.NOW
        )

    async def cancel(self, user: User, job: Job, place: Place) -> None:
        """Cancel ``job`` for ``user`` (its requester or an admin; :class:`UserError` for
        anyone else, or a job that cannot be cancelled now), acting in ``place``. The admin
        page calls this too. The audit entry of an admin's cancel of the job of a user who
        deleted their data names no requester (the job's derived name leads back to them)."""
        if not (user.is_admin or user.id == job.requester_id):
            raise UserError(_("Only the person who started this job can cancel it."))
        if job.status == "creating":
            raise UserError(_("It is still being sent to the service; try again in a moment."))
        if job.status == "cancelled":
            raise UserError(_("This job is already cancelled."))
        if job.status not in CANCELLABLE:
            raise UserError(_("This job has already finished."))
        with speaking(job_language(job)):
            cancelled = _("Cancelled by {user}.", user=user.name or user.id)
        for_requester = user.id != job.requester_id
        result = result_with(job, cancelled=True, cancelled_by_admin=for_requester or None)
        moved = await self._store.transition(
            job.id, CANCELLABLE, "cancelled", error=cancelled, result=result
        )
        if not moved:
            raise UserError(_("This job has just finished; its result is on its way."))
        if for_requester:
            before = {"status": job.status, "requester_id": job.requester_id}
            if forgotten(job.requester_id):
                del before["requester_id"]
            await self._audit.record(
                "job.cancelled",
                place,
                user.id,
                job.id,
                before=before,
                after={"status": "cancelled", "cancelled": True},
            )
        self._watch.touch(job.id)
        hidden = replace(job, status="cancelled", error=cancelled, result=result)
        await self._delivery.hide_cancelled(hidden)
