"""An image task to create: its request (built, and so validated, before anything is stored)
and the bound :class:`bot.api.TaskClient` method that sends it.

The starter runs a :class:`TaskCall` once the job is stored
(:meth:`bot.features.jobs.starter.JobStarter.start`):
the job's webhook is added to the request, and the provider's task id becomes the job's. For a
follow-up button (``refusable``), a refusal of the follow-up itself is raised as
:class:`bot.features.jobs.refusals.FollowUpRefused`, so the starter can disable the button.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from bot.api import ApiError, CreateTaskResponse, RequestModel, WebhookFields
from bot.features.jobs.refusals import FollowUpRefused, refuses_follow_up
from bot.features.jobs.starter import Submitted
from bot.features.jobs.webhook_addresses import Webhook
from storage import Job

RequestT = TypeVar("RequestT", bound=RequestModel)


def with_webhook(request: RequestT, hook: Webhook | None) -> RequestT:
    """``request`` with the job's webhook address and secret, when it has them and the
    endpoint takes them."""
    if hook is None or not isinstance(request, WebhookFields):
        return request
    return request.model_copy(update={"webhook_endpoint": hook[0], "webhook_secret": hook[1]})


@dataclass(frozen=True)
class TaskCall(Generic[RequestT]):
    """``send(request)`` once the job exists; ``refusable``: the follow-up action whose
    refusal by the provider is the button's fault (None for commands)."""

    request: RequestT
    send: Callable[[RequestT], Awaitable[CreateTaskResponse]]
    refusable: str | None = None

    async def __call__(self, job: Job, hook: Webhook | None) -> Submitted:
        try:
            answer = await self.send(with_webhook(self.request, hook))
        except ApiError as error:
            if self.refusable is None or not refuses_follow_up(error):
                raise
            raise FollowUpRefused(self.refusable, error) from error
        return Submitted(answer.task_id)
