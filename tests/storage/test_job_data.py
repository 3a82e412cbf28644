"""A job's parameters and result as storage keeps them: the typed views' JSON round-trips, and
changes of one result from two processes all stay."""

from __future__ import annotations

import asyncio

from bot.features.jobs.params import (
    ImageParams,
    JobResult,
    adding_pressed,
    adding_refused,
)
from storage import Store
from tests.storage.conftest import new_job
from tests.storage.helpers import create_job


async def test_typed_parameters_are_stored_as_the_same_json(store: Store) -> None:
    params = ImageParams(aspect_ratio="2:3", process_mode="fast", model_version="6.1")
    job = await create_job(store.admission, new_job(parameters=params.to_json()))
    stored = await store.jobs.get_job(job.id)
    assert stored is not None
    assert stored.parameters == {
        "aspect_ratio": "2:3",
        "process_mode": "fast",
        "model_version": "6.1",
        "remix": False,
    }
    assert ImageParams.of(stored) == params


async def test_changes_of_one_result_from_two_processes_all_stay(
    store: Store, other_store: Store
) -> None:
    job = await create_job(store.admission, new_job())
    await store.jobs.update_job(job.id, result={"seed": "42"})
    actions = [f"upscale{n}" for n in range(1, 5)] + [f"variation{n}" for n in range(1, 5)]

    await asyncio.gather(
        *(
            (store if n % 2 else other_store).jobs.change_job_result(job.id, adding_pressed(action))
            for n, action in enumerate(actions)
        ),
        *(
            (other_store if n % 2 else store).jobs.change_job_result(job.id, adding_refused(action))
            for n, action in enumerate(actions[:3])
        ),
    )

    changed = await store.jobs.get_job(job.id)
    assert changed is not None
    stored = JobResult.of(changed)
    assert stored.pressed == tuple(sorted(actions))
    assert stored.refused_actions == tuple(sorted(actions[:3]))
    assert stored.seed == "42"


async def test_a_result_change_that_finds_nothing_to_do_writes_nothing(store: Store) -> None:
    job = await create_job(store.admission, new_job())
    first = await store.jobs.change_job_result(job.id, adding_pressed("upscale1"))
    again = await store.jobs.change_job_result(job.id, adding_pressed("upscale1"))
    assert first is not None and again is not None

    assert JobResult.of(first).pressed == ("upscale1",)
    assert again.updated_at == first.updated_at
    assert await store.jobs.change_job_result("no-such-job", adding_pressed("upscale1")) is None
