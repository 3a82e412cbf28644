"""The usage ledger by UTC day."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from storage import ESTIMATED_CREDITS, StorageError, Store
from tests.storage.conftest import ManualClock

LAST_SECOND_OF_MARCH_1 = datetime(2024, 3, 1, 23, 59, 59, tzinfo=UTC).timestamp()


async def test_totals_per_user_per_utc_day(store: Store, clock: ManualClock) -> None:
    clock.now = LAST_SECOND_OF_MARCH_1
    await store.ledger.add_usage("discord", "u1", tokens_prompt=100, tokens_completion=50)
    await store.ledger.add_usage("discord", "u1", credits=4, kind="task", job_id="j1")
    await store.ledger.add_usage("discord", "u2", credits=1, kind="task")
    await store.ledger.add_usage("slack", "u1", credits=7, kind="task")
    clock.advance(2)
    await store.ledger.add_usage("discord", "u1", tokens_prompt=1, credits=2, kind="task")

    march_1 = await store.ledger.usage_for_user("discord", "u1", "2024-03-01")
    assert (march_1.tokens_prompt, march_1.tokens_completion, march_1.credits) == (100, 50, 4)
    assert (march_1.tokens, march_1.entries) == (150, 2)
    today = await store.ledger.usage_for_user("discord", "u1")
    assert (today.tokens_prompt, today.credits, today.entries) == (1, 2, 1)
    assert await store.ledger.usage_for_user("discord", "u1", date(2024, 3, 2)) == today
    assert (await store.ledger.usage_for_user("discord", "u9")).entries == 0
    assert (await store.ledger.usage_for_user("slack", "u1", "2024-03-01")).credits == 7


async def test_a_job_is_charged_once_per_kind(store: Store) -> None:
    assert await store.ledger.add_usage("discord", "u1", credits=2, kind="task", job_id="j1")
    assert not await store.ledger.add_usage("discord", "u1", credits=2, kind="task", job_id="j1")
    assert await store.ledger.add_usage("discord", "u1", credits=1, kind="refund", job_id="j1")
    assert await store.ledger.add_usage("discord", "u1", credits=1, kind="chat")
    assert await store.ledger.add_usage("discord", "u1", credits=1, kind="chat")
    assert (await store.ledger.usage_for_user("discord", "u1")).credits == 5


async def test_usage_at_an_explicit_time(store: Store) -> None:
    await store.ledger.add_usage("web", "u1", credits=3, at=LAST_SECOND_OF_MARCH_1 + 3600)
    assert (await store.ledger.usage_for_user("web", "u1", "2024-03-02")).credits == 3
    with pytest.raises(StorageError, match="not a day"):
        await store.ledger.usage_for_user("web", "u1", "March 2")


async def test_estimated_credits_are_summed_apart_and_within_the_credits(store: Store) -> None:
    await store.ledger.add_usage("discord", "u1", credits=4, kind="credits", job_id="j1")
    await store.ledger.add_usage("discord", "u1", credits=3, kind=ESTIMATED_CREDITS, job_id="j2")
    totals = await store.ledger.usage_for_user("discord", "u1")
    assert (totals.credits, totals.estimated_credits) == (7, 3)


async def test_a_chat_answers_completion_is_set_on_the_usage_recorded_as_it_began(
    store: Store,
) -> None:
    ledger = store.ledger
    await ledger.add_usage("web", "U1", tokens_prompt=100, job_id="chat-answer:7")
    assert await ledger.complete_usage("chat-answer:7", 40)
    assert not await ledger.complete_usage("chat-answer:8", 40)
    totals = await ledger.usage_for_user("web", "U1")
    assert (totals.tokens_prompt, totals.tokens_completion, totals.entries) == (100, 40, 1)


async def test_completing_a_chat_answer_can_set_the_prompt_tokens_the_provider_counted(
    store: Store,
) -> None:
    ledger = store.ledger
    await ledger.add_usage("web", "U1", tokens_prompt=100, job_id="chat-answer:7")
    assert await ledger.complete_usage("chat-answer:7", 40, tokens_prompt=123)
    assert not await ledger.complete_usage("chat-answer:8", 40, tokens_prompt=123)
    totals = await ledger.usage_for_user("web", "U1")
    assert (totals.tokens_prompt, totals.tokens_completion, totals.entries) == (123, 40, 1)
