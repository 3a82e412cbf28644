"""Where the provider is asked to notify genbot of a job, learnt from its refusals.

The API documentation says a webhook address "must be of the form https://domain". genbot asks
for ``<public_url>/<path>/<job_id>`` (the job in the address), which a provider may refuse. So
the forms are tried in order — the job's address, the bare address (``public_url``'s scheme,
host and port: the receiver then finds the job by the task id in the notification's body), then
no webhook at all (polling only) — and the first one the provider accepts after a refusal is kept
for the process and logged once (docs/provider.md#webhook-address). Only a refusal that names the
webhook, or says the body could not be parsed, moves to the next form; any other error is the
answer.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import TypeVar
from urllib.parse import urlsplit

from bot.api.errors import ApiError, BadRequest, RefusalKind, TaskCreationRefused

log = logging.getLogger(__name__)

Webhook = tuple[str, str]
"""A webhook address and the secret the provider sends with each notification."""
T = TypeVar("T")
_WEBHOOK_WORDS = re.compile(r"webhook", re.IGNORECASE)


class WebhookForm(Enum):
    """How a job's webhook address is written, best first."""

    JOB = "the job's own address"
    BARE = "the bare https://domain address"
    NONE = "no webhook (polling only)"


def bare_address(base: str) -> str:
    """The scheme, host and port of ``base`` (``https://bot.example.com/webhooks/tasks`` →
    ``https://bot.example.com``)."""
    parts = urlsplit(base)
    return f"{parts.scheme}://{parts.netloc}"


def refuses_webhook(error: BaseException) -> bool:
    """Whether a creation's ``error`` may be the provider refusing its webhook address: a 400
    or ``status: failed`` that names the webhook, or a body it could not parse."""
    cause = getattr(error, "cause", error)
    if isinstance(cause, TaskCreationRefused) and cause.kind is RefusalKind.BODY_PARSING_FAILED:
        return True
    if isinstance(cause, BadRequest | TaskCreationRefused):
        return bool(_WEBHOOK_WORDS.search(cause.provider_message))
    return False


class WebhookAddresses:
    """The webhook forms of one process (see the module docstring); ``base`` is
    ``public_url`` + ``path``."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")
        self.form = WebhookForm.JOB

    def address(self, form: WebhookForm, job_id: str) -> str | None:
        """Where ``form`` asks the provider to notify genbot of ``job_id``."""
        if form is WebhookForm.JOB:
            return f"{self.base}/{job_id}"
        if form is WebhookForm.BARE:
            return bare_address(self.base)
        return None

    async def submit(
        self, job_id: str, secret: str, send: Callable[[Webhook | None], Awaitable[T]]
    ) -> T:
        """``send`` with the job's webhook in the form learnt so far; a refusal that may be
        about the address tries the next form, and a form accepted after a refusal is kept."""
        forms = list(WebhookForm)[list(WebhookForm).index(self.form) :]
        for position, form in enumerate(forms):
            address = self.address(form, job_id)
            try:
                answer = await send((address, secret) if address is not None else None)
            except ApiError as error:
                if position + 1 == len(forms) or not refuses_webhook(error):
                    raise
                log.info("creation refused with the webhook as %s (%s)", form.value, error)
                continue
            self._keep(form)
            return answer
        raise AssertionError("the last form raises or returns")

    def _keep(self, form: WebhookForm) -> None:
        if form is not self.form:
            log.warning(
                "the provider refused genbot's webhook address as %s; using %s from now on",
                self.form.value,
                form.value,
            )
            self.form = form
