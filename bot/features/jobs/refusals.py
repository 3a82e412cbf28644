"""Refusals of a job's creation: a follow-up the provider refuses (the user is told which one,
and its button is disabled), and which refusals are the user's to read privately.

When genbot offers a follow-up the provider does not accept for that image (genbot guessed it
from the documented rules, or the provider changed its mind), the creation call answers 400 or
``status: failed``. The job ends ``create_failed`` with a message naming the button, the action
is recorded on the pressed job (``result["refused_actions"]``) and its result message is redrawn
with that button disabled, so nobody presses it again. A refusal for want of credits is not the
action's fault and disables nothing.

A 400, for any job, and a follow-up's refusal are the provider's refusal of the request itself
(:func:`refuses_request`): the presser or the command's user reads it privately (ephemeral on
Discord and Slack, private in the playground) and the job's card leaves the channel; other
refusals stay on the job's card.
"""

from __future__ import annotations

import logging

from bot.api.errors import ApiError, BadRequest, RefusalKind, TaskCreationRefused
from bot.features.jobs.buttons import LABELS
from bot.features.jobs.follow_ups import refused_actions
from bot.features.jobs.messages import JobMessages
from bot.features.jobs.params import adding_refused
from bot.kernel import _, provider_text
from storage import JobWriter

log = logging.getLogger(__name__)


class FollowUpRefused(ApiError):
    """The provider refused to start the follow-up ``action`` of an image."""

    def __init__(self, action: str, cause: ApiError) -> None:
        self.action = action
        self.cause = cause
        label = _(LABELS.get(action, action))
        reason = getattr(cause, "provider_message", "") or provider_text(cause)
        self.user_message = _(
            "The service refused {label} on this image: {reason}", label=label, reason=reason
        )
        super().__init__(f"follow-up {action} refused: {cause}")


def refuses_follow_up(error: BaseException) -> bool:
    """Whether a creation call's ``error`` means the provider will not do this follow-up on
    this image (a 400, or ``status: failed`` for any reason but credits)."""
    if isinstance(error, BadRequest):
        return True
    if isinstance(error, TaskCreationRefused):
        return error.kind is not RefusalKind.INSUFFICIENT_CREDIT
    return False


def refuses_request(error: BaseException) -> bool:
    """Whether a creation call's ``error`` is the provider's refusal of the request itself:
    its validation answer (HTTP 400, "request format does not meet requirements": a ratio, a
    version, a value it does not take), or its refusal of a follow-up on that image
    (:class:`FollowUpRefused`: a 400, or ``status: failed`` for the image's sake: its task
    gone, that button already used). Nothing started, and the reason is the presser's or the
    requester's own, so it is told to them privately and no job card stays in the channel (the
    pressed image stays as it was but for the refused button, disabled)
    (:meth:`bot.features.jobs.starter.JobStarter.start`). A command's creation refused in the
    body, a refusal for want of credits, a key's or an account's refusal, a server error or a
    timeout are not."""
    return isinstance(error, FollowUpRefused | BadRequest)


async def disable_follow_up(
    store: JobWriter, delivery: JobMessages, job_id: str, action: str
) -> None:
    """Record that the provider refused ``action`` on job ``job_id`` and redraw its buttons."""
    job = await store.get_job(job_id)
    if job is None or action in refused_actions(job):
        return
    updated = await store.change_job_result(job.id, adding_refused(action))
    log.info("job %s: the provider refused %s; its button is disabled", job.id, action)
    if updated is not None:
        await delivery.redraw_buttons(updated)
