"""Saved options and batches on both backends: options per user, everywhere or in one channel;
a batch settled once, by one call of any process, only while it has not expired."""

from __future__ import annotations

import asyncio

from storage import Batch, SavedOption, Store
from storage.queries.preferences import BATCHES_KEPT_SECONDS
from tests.storage.conftest import ManualClock


async def test_options_are_a_users_everywhere_and_in_one_channel(store: Store) -> None:
    prefs = store.preferences
    await prefs.set_option("slack", "U1", SavedOption("neon", "--style raw"))
    await prefs.set_option("slack", "U1", SavedOption("neon", "--v 6", "C2"))
    await prefs.set_option("slack", "U1", SavedOption("neon", "--style raw --sref https://x/a"))
    await prefs.set_option("slack", "U2", SavedOption("mine", "--v 5"))
    await prefs.set_option("discord", "U1", SavedOption("other", "--v 5"))

    assert await prefs.options("slack", "U1", "C1") == [
        SavedOption("neon", "--style raw --sref https://x/a")
    ]
    assert await prefs.options("slack", "U1", "C2") == [
        SavedOption("neon", "--style raw --sref https://x/a"),
        SavedOption("neon", "--v 6", "C2"),
    ]
    assert not await prefs.delete_option("slack", "U1", "neon", "C1")
    assert await prefs.delete_option("slack", "U1", "neon", "C2")
    assert await prefs.delete_option("slack", "U1", "neon")
    assert await prefs.options("slack", "U1", "C2") == []


def _batch(clock: ManualClock, name: str = "b1") -> Batch:
    return Batch(
        id=name,
        platform="slack",
        workspace_id="T1",
        channel_id="C1",
        requester_id="U1",
        command={"jobs": [{"prompt": "red fox"}, {"prompt": "blue fox"}]},
        created_at=clock.now,
        expires_at=clock.now + 300,
        total=2,
    )


async def test_a_batch_is_settled_once_across_processes(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    await store.preferences.save_batch(_batch(clock))
    stored = await other_store.preferences.batch("b1")
    assert stored is not None and stored.command["jobs"][1] == {"prompt": "blue fox"}
    assert stored.outcome is None

    won = await asyncio.gather(
        *(s.preferences.settle_batch("b1", "run") for s in (store, other_store, store))
    )
    assert sorted(won) == [False, False, True]
    assert not await store.preferences.settle_batch("b1", "cancelled")
    settled = await store.preferences.batch("b1")
    assert settled is not None and settled.outcome == "run"


async def test_an_expired_batch_cannot_be_settled_and_is_purged_later(
    store: Store, clock: ManualClock
) -> None:
    await store.preferences.save_batch(_batch(clock))
    clock.advance(301)
    assert not await store.preferences.settle_batch("b1", "run")
    assert await store.preferences.batch("b1") is not None
    await store.preferences.save_batch(_batch(clock, "running"))
    assert await store.preferences.settle_batch("running", "run")
    clock.advance(BATCHES_KEPT_SECONDS + 301)
    await store.preferences.save_batch(_batch(clock, "b2"))
    assert await store.preferences.batch("b1") is None
    assert await store.preferences.batch("b2") is not None
    assert await store.preferences.batch("running") is not None, "its jobs still wait"


async def test_a_run_batch_is_listed_until_its_jobs_are_started(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    await store.preferences.save_batch(_batch(clock, "b1"))
    await store.preferences.save_batch(_batch(clock, "b2"))
    assert await store.preferences.running_batches() == []
    assert await store.preferences.settle_batch("b1", "run")
    assert await store.preferences.settle_batch("b2", "cancelled")
    [running] = await other_store.preferences.running_batches()
    assert (running.id, running.started, running.total) == ("b1", 0, 2)

    await store.preferences.mark_started("b1", 1)
    await other_store.preferences.mark_started("b1", 0)
    [running] = await store.preferences.running_batches()
    assert running.started == 1, "started never goes back"
    await store.preferences.mark_started("b1", 2)
    assert await store.preferences.running_batches() == []
