"""The usage ledger by UTC day, and inbound event dedup."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from sqlite_utils import Database

import storage.ledger
from storage import StorageError, Store
from tests.storage.conftest import ManualClock

LAST_SECOND_OF_MARCH_1 = datetime(2024, 3, 1, 23, 59, 59, tzinfo=UTC).timestamp()


async def test_totals_per_user_per_utc_day(store: Store, clock: ManualClock) -> None:
    clock.now = LAST_SECOND_OF_MARCH_1
    await store.add_usage("discord", "u1", tokens_prompt=100, tokens_completion=50)
    await store.add_usage("discord", "u1", credits=4, kind="task", job_id="j1")
    await store.add_usage("discord", "u2", credits=1, kind="task")
    await store.add_usage("slack", "u1", credits=7, kind="task")
    clock.advance(2)
    await store.add_usage("discord", "u1", tokens_prompt=1, credits=2, kind="task")

    march_1 = await store.usage_for_user("discord", "u1", "2024-03-01")
    assert (march_1.tokens_prompt, march_1.tokens_completion, march_1.credits) == (100, 50, 4)
    assert (march_1.tokens, march_1.entries) == (150, 2)
    today = await store.usage_for_user("discord", "u1")
    assert (today.tokens_prompt, today.credits, today.entries) == (1, 2, 1)
    assert await store.usage_for_user("discord", "u1", date(2024, 3, 2)) == today
    assert (await store.usage_for_user("discord", "u9")).entries == 0

    everyone = await store.usage_for_day("2024-03-01")
    assert (everyone.credits, everyone.entries) == (12, 4)
    assert (await store.usage_for_day("2024-03-01", platform="discord")).credits == 5
    assert (await store.usage_for_day()).credits == 2


async def test_a_job_is_charged_once_per_kind(store: Store) -> None:
    assert await store.add_usage("discord", "u1", credits=2, kind="task", job_id="j1")
    assert not await store.add_usage("discord", "u1", credits=2, kind="task", job_id="j1")
    assert await store.add_usage("discord", "u1", credits=1, kind="refund", job_id="j1")
    assert await store.add_usage("discord", "u1", credits=1, kind="chat")
    assert await store.add_usage("discord", "u1", credits=1, kind="chat")
    assert (await store.usage_for_user("discord", "u1")).credits == 5


async def test_usage_at_an_explicit_time(store: Store) -> None:
    await store.add_usage("web", "u1", credits=3, at=LAST_SECOND_OF_MARCH_1 + 3600)
    assert (await store.usage_for_user("web", "u1", "2024-03-02")).credits == 3
    with pytest.raises(StorageError, match="not a day"):
        await store.usage_for_user("web", "u1", "March 2")


async def test_an_event_is_handled_once_per_platform(store: Store) -> None:
    assert await store.remember_event("slack", "Ev01")
    assert not await store.remember_event("slack", "Ev01")
    assert await store.remember_event("discord", "Ev01")
    assert await store.remember_event("slack", "Ev02")


async def test_old_events_are_pruned(
    store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert await store.remember_event("slack", "old")
    clock.advance(store.event_retention + 1)
    assert await store.remember_event("slack", "recent")
    assert await store.prune_events() == 1
    assert await store.remember_event("slack", "old")
    assert not await store.remember_event("slack", "recent")

    monkeypatch.setattr(storage.ledger, "PRUNE_EVERY", 3)
    clock.advance(store.event_retention + 1)
    assert await store.remember_event("slack", "a")
    assert await store.remember_event("slack", "b")
    assert await store.remember_event("slack", "c")

    def remembered(db: Database) -> int:
        return int(db.execute("SELECT COUNT(*) FROM processed_events").fetchone()[0])

    assert await store.run_in_worker(remembered) == 3
