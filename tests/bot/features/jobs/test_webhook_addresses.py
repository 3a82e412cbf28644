"""Which webhook address a provider accepts: the job's, the bare one, or none — learnt once."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import pytest

from bot.api import ApiError, BadRequest, ServerError, TaskCreationRefused
from bot.features.jobs.webhook_addresses import (
    Webhook,
    WebhookAddresses,
    WebhookForm,
    bare_address,
    refuses_webhook,
)

BASE = "https://bot.example.com/webhooks/tasks"


Send = Callable[[Webhook | None], Awaitable[str]]


def refusing(*refused: str | None, error: ApiError | None = None) -> tuple[list[str | None], Send]:
    """A provider that refuses the webhook addresses in ``refused`` (with ``error``)."""
    seen: list[str | None] = []

    async def send(hook: Webhook | None) -> str:
        address = hook[0] if hook is not None else None
        seen.append(address)
        if address in refused:
            raise error or BadRequest("webhook_endpoint must be of the form https://domain")
        return "task-1"

    return seen, send


async def test_a_refused_address_falls_back_to_the_bare_one_and_keeps_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    addresses = WebhookAddresses(BASE)
    seen, send = refusing(f"{BASE}/job1", f"{BASE}/job2")
    assert await addresses.submit("job1", "s", send) == "task-1"
    assert await addresses.submit("job2", "s", send) == "task-1"
    assert seen == [f"{BASE}/job1", "https://bot.example.com", "https://bot.example.com"]
    assert addresses.form is WebhookForm.BARE
    kept = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(kept) == 1 and "the bare https://domain address" in kept[0].message


async def test_a_provider_taking_no_webhook_at_all_gets_none() -> None:
    addresses = WebhookAddresses(BASE)
    seen, send = refusing(f"{BASE}/job1", "https://bot.example.com")
    assert await addresses.submit("job1", "s", send) == "task-1"
    assert seen == [f"{BASE}/job1", "https://bot.example.com", None]
    assert addresses.form is WebhookForm.NONE


async def test_a_refusal_that_is_not_about_the_webhook_is_the_answer() -> None:
    addresses = WebhookAddresses(BASE)
    credits = TaskCreationRefused("insufficient credit balance")
    seen, send = refusing(f"{BASE}/job1", error=credits)
    with pytest.raises(TaskCreationRefused):
        await addresses.submit("job1", "s", send)
    assert seen == [f"{BASE}/job1"] and addresses.form is WebhookForm.JOB


async def test_nothing_is_learnt_when_every_form_is_refused() -> None:
    addresses = WebhookAddresses(BASE)
    parsing = TaskCreationRefused("body parsing failed")
    seen, send = refusing(f"{BASE}/job1", "https://bot.example.com", None, error=parsing)
    with pytest.raises(TaskCreationRefused):
        await addresses.submit("job1", "s", send)
    assert len(seen) == 3 and addresses.form is WebhookForm.JOB


def test_which_refusals_may_be_about_the_address() -> None:
    assert refuses_webhook(BadRequest("webhook_endpoint: only https://domain"))
    assert refuses_webhook(TaskCreationRefused("body parsing failed"))
    assert not refuses_webhook(BadRequest("prompt must not be empty"))
    assert not refuses_webhook(ServerError(500, "webhook down"))
    assert bare_address("http://127.0.0.1:8080/webhooks/tasks") == "http://127.0.0.1:8080"
