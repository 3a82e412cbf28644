"""A requester's recent jobs, newest first (both backends)."""

from __future__ import annotations

from storage import Store
from tests.storage.conftest import ManualClock, new_job
from tests.storage.helpers import create_job


async def test_recent_jobs_are_the_requesters_newest_in_the_asked_statuses(
    store: Store, clock: ManualClock
) -> None:
    made = []
    for _ in range(4):
        job = await create_job(store.admission, new_job(platform="slack", workspace_id="T1"))
        made.append(job)
        clock.advance(10)
    elsewhere = await create_job(store.admission, new_job(platform="slack", workspace_id="T2"))
    await create_job(
        store.admission, new_job(platform="slack", requester_id="u2", workspace_id="T1")
    )
    for job in [*made[:3], elsewhere]:
        await store.jobs.transition(job.id, "creating", "finished")
        await store.jobs.transition(job.id, "finished", "posting")
        await store.jobs.transition(job.id, "posting", "posted")

    newest = await store.history.recent_jobs("slack", "u1", workspace_id="T1", limit=2)
    anywhere = await store.history.recent_jobs("slack", "u1")
    unfinished = await store.history.recent_jobs("slack", "u1", statuses=["creating"])

    assert [j.id for j in newest] == [made[2].id, made[1].id]
    assert [j.id for j in anywhere] == [elsewhere.id, made[2].id, made[1].id, made[0].id]
    assert [j.id for j in unfinished] == [made[3].id]
    assert await store.history.recent_jobs("discord", "u1") == []


async def test_recent_posted_jobs_are_everyones_newest_with_a_result(
    store: Store, clock: ManualClock
) -> None:
    made = []
    for requester in ("u1", "u2", "u3"):
        made.append(
            await create_job(store.admission, new_job(platform="slack", requester_id=requester))
        )
        clock.advance(10)
    for job in made[:2]:
        await store.jobs.transition(job.id, "creating", "finished")
        await store.jobs.transition(job.id, "finished", "posting")
        await store.jobs.transition(job.id, "posting", "posted")

    assert [j.id for j in await store.history.recent_posted_jobs(5)] == [made[1].id, made[0].id]
    assert [j.id for j in await store.history.recent_posted_jobs(1)] == [made[1].id]
