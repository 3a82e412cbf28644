"""Inbound event dedupe: each platform event is handled once, by one process."""

from __future__ import annotations

import asyncio

from storage import Storage
from tests.storage.conftest import ManualClock

RETENTION = 24 * 3600.0


async def test_an_event_is_handled_once_per_platform(store: Storage) -> None:
    assert await store.remember_event("slack", "Ev01")
    assert not await store.remember_event("slack", "Ev01")
    assert await store.remember_event("discord", "Ev01")
    assert await store.remember_event("slack", "Ev02")


async def test_one_event_delivered_to_two_processes_is_handled_by_one(
    store: Storage, other_store: Storage
) -> None:
    firsts = await asyncio.gather(
        *((store if n % 2 else other_store).remember_event("slack", "Ev1") for n in range(10))
    )
    assert firsts.count(True) == 1


async def test_an_event_older_than_the_retention_is_new_again(
    store: Storage, clock: ManualClock
) -> None:
    assert await store.remember_event("slack", "old")
    clock.advance(RETENTION - 1)
    assert not await store.remember_event("slack", "old")
    clock.advance(RETENTION + 1)
    assert await store.remember_event("slack", "old")
    assert not await store.remember_event("slack", "old")
