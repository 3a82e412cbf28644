"""Inbound event dedupe: each platform event is handled once, by one process."""

from __future__ import annotations

import asyncio

import pytest

from storage import Store
from storage.queries import events
from tests.storage.conftest import ManualClock

RETENTION = 24 * 3600.0


async def test_an_event_is_handled_once_per_platform(store: Store) -> None:
    assert await store.dedupe.remember_event("slack", "Ev01")
    assert not await store.dedupe.remember_event("slack", "Ev01")
    assert await store.dedupe.remember_event("discord", "Ev01")
    assert await store.dedupe.remember_event("slack", "Ev02")


async def test_one_event_delivered_to_two_processes_is_handled_by_one(
    store: Store, other_store: Store
) -> None:
    firsts = await asyncio.gather(
        *(
            (store if n % 2 else other_store).dedupe.remember_event("slack", "Ev1")
            for n in range(10)
        )
    )
    assert firsts.count(True) == 1


async def test_an_event_older_than_the_retention_is_new_again(
    store: Store, clock: ManualClock
) -> None:
    assert await store.dedupe.remember_event("slack", "old")
    clock.advance(RETENTION - 1)
    assert not await store.dedupe.remember_event("slack", "old")
    clock.advance(RETENTION + 1)
    assert await store.dedupe.remember_event("slack", "old")
    assert not await store.dedupe.remember_event("slack", "old")


async def test_expired_events_are_pruned_every_few_calls(
    store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(events, "PRUNE_EVERY", 3)
    assert await store.dedupe.remember_event("slack", "old")
    clock.advance(RETENTION + 1)
    assert await store.dedupe.remember_event("slack", "a")
    assert await store.dedupe.remember_event("slack", "b")
    remembered = await store.db.fetch_all("SELECT event_id FROM processed_events")
    assert sorted(row["event_id"] for row in remembered) == ["a", "b"]
