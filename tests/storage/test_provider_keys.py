"""Choosing a provider key with room as a job is created (caps counted over every process),
moving a refused job to another key, and each key's usage."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from storage import JobQuota, KeyRoom, KeyUsage, NoKeyRoom, QuotaRefusal, Store
from tests.storage.conftest import ManualClock, new_job

NO_QUOTA = JobQuota()


async def created_key(store: Store, keys: list[KeyRoom], prompt: str = "p") -> str | None:
    outcome = await store.admission.create_job_within(new_job(prompt=prompt), NO_QUOTA, keys)
    assert not isinstance(outcome, QuotaRefusal)
    return outcome[0].provider_key


async def test_concurrent_creations_from_two_processes_keep_each_keys_cap(
    store: Store, other_store: Store
) -> None:
    keys = [KeyRoom("a", max_concurrent=2), KeyRoom("b", max_concurrent=3)]

    async def one(n: int) -> str | None:
        try:
            return await created_key(store if n % 2 else other_store, keys, f"p{n}")
        except NoKeyRoom:
            return None

    chosen = await asyncio.gather(*(one(n) for n in range(8)))
    assert sorted(name for name in chosen if name) == ["a", "a", "b", "b", "b"]
    assert chosen.count(None) == 3
    assert await store.admission.key_usage() == {"a": KeyUsage(2, 2), "b": KeyUsage(3, 3)}


async def test_a_key_frees_its_place_when_a_job_ends_and_the_daily_cap_holds_all_day(
    store: Store, clock: ManualClock
) -> None:
    keys = [KeyRoom("a", max_concurrent=1, daily_tasks=1)]
    first = await store.admission.create_job_within(new_job(), NO_QUOTA, keys)
    assert not isinstance(first, QuotaRefusal) and first[0].provider_key == "a"
    with pytest.raises(NoKeyRoom):
        await created_key(store, keys)
    assert await store.jobs.transition(first[0].id, "creating", "create_failed")
    assert await created_key(store, keys) == "a"
    job = (await store.tracking.list_unfinished_jobs({"creating"}))[0]
    assert await store.jobs.transition(job.id, "creating", "finished", credits=3)
    with pytest.raises(NoKeyRoom):
        await created_key(store, keys)
    assert await store.admission.key_usage() == {"a": KeyUsage(0, 1, 3)}
    clock.advance(86400)
    assert await created_key(store, keys) == "a"


async def test_a_given_key_is_kept_and_a_refused_job_moves_to_a_key_with_room(
    store: Store,
) -> None:
    given = await store.admission.create_job_within(
        replace(new_job(), provider_key="parent-key"), NO_QUOTA, [KeyRoom("other")]
    )
    assert not isinstance(given, QuotaRefusal) and given[0].provider_key == "parent-key"
    made = await store.admission.create_job_within(new_job(), NO_QUOTA, [KeyRoom("bad")])
    assert not isinstance(made, QuotaRefusal)
    full = KeyRoom("parent-key", max_concurrent=1)
    with pytest.raises(NoKeyRoom):
        await store.admission.move_to_key(made[0].id, [full])
    assert await store.admission.move_to_key(made[0].id, [full, KeyRoom("good")]) == "good"
    moved = await store.jobs.get_job(made[0].id)
    assert moved is not None and moved.provider_key == "good"
    assert await store.jobs.transition(made[0].id, "creating", "submitted", provider_id="t1")
    assert await store.admission.move_to_key(made[0].id, [KeyRoom("bad")]) is None


async def test_a_task_counts_once_on_its_key_and_a_job_cancelled_unconfirmed_counts_none(
    store: Store,
) -> None:
    # A job cancelled while unknown (the provider never confirmed it) frees its key's place at
    # once, as it frees its requester's; a late webhook adopting its task counts that task once
    # while it runs, and its end frees the place again.
    keys = [KeyRoom("a", max_concurrent=1)]
    made = await store.admission.create_job_within(new_job(), NO_QUOTA, keys)
    assert not isinstance(made, QuotaRefusal)
    job = made[0]
    assert await store.jobs.transition(job.id, "creating", "unknown")
    assert await store.jobs.transition(job.id, "unknown", "cancelled")
    assert await store.admission.key_usage() == {"a": KeyUsage(0, 1)}
    second = await created_key(store, keys, "second")
    assert second == "a", "the cancelled unconfirmed job holds no place on its key"
    (other,) = await store.tracking.list_unfinished_jobs({"creating"})
    assert await store.jobs.transition(other.id, "creating", "create_failed")

    assert await store.jobs.transition(job.id, "cancelled", "cancelled", provider_id="t1")
    assert await store.admission.key_usage() == {"a": KeyUsage(1, 1)}, "adopted: counted once"
    with pytest.raises(NoKeyRoom):
        await created_key(store, keys, "third")
    assert await store.jobs.transition(job.id, "cancelled", "failed", provider_id="t1")
    assert await store.admission.key_usage() == {"a": KeyUsage(0, 1)}
    assert await created_key(store, keys, "fourth") == "a"
