"""Claiming a job for delivery: one transaction, one winner, credits recorded once; claims
asked together share one transaction."""

from __future__ import annotations

import asyncio
from typing import Any

from storage import JobChannel, RunningJob, Store
from tests.storage.conftest import ManualClock, new_job
from tests.storage.counting import counted
from tests.storage.helpers import create_job


async def finished_job(store: Store, requester_id: str = "u1", **fields: Any) -> str:
    job = await create_job(store.admission, new_job(requester_id=requester_id))
    assert await store.jobs.transition(job.id, "creating", "finished", credits=8, **fields)
    return job.id


async def test_a_finished_job_is_claimed_once_and_its_credits_recorded_once(
    store: Store, other_store: Store
) -> None:
    job_id = await finished_job(store)

    claims = await asyncio.gather(
        *(
            (store if n % 2 else other_store).claims.claim_delivery(
                job_id, ("discord",), due_by=0.0
            )
            for n in range(6)
        )
    )

    [claimed] = [job for job in claims if job is not None]
    assert (claimed.status, claimed.post_claims) == ("posting", 1)
    assert await store.jobs.transition(job_id, "posting", "finished")
    again = await store.claims.claim_delivery(job_id, ("discord",), due_by=0.0)
    assert again is not None and again.post_claims == 2
    usage = await store.ledger.usage_for_user("discord", "u1")
    assert (usage.credits, usage.entries) == (8, 1)


async def test_a_failed_job_is_claimed_for_its_report_without_charging(store: Store) -> None:
    job = await create_job(store.admission, new_job())
    assert await store.jobs.transition(job.id, "creating", "failed", credits=8)

    claimed = await store.claims.claim_delivery(job.id, ("discord",), due_by=0.0)

    assert claimed is not None and claimed.status == "reporting"
    assert (await store.ledger.usage_for_user("discord", "u1")).entries == 0


async def test_a_cancelled_job_the_provider_ended_is_charged_once_when_its_report_is_claimed(
    store: Store, other_store: Store
) -> None:
    job = await create_job(store.admission, new_job(status="processing"))
    assert await store.jobs.transition(
        job.id, "processing", "cancelled", result={"cancelled": True}
    )
    assert await store.claims.claim_delivery(job.id, ("discord",), due_by=0.0) is None
    assert await store.jobs.transition(job.id, "cancelled", "failed", credits=8)

    claims = await asyncio.gather(
        *(
            (store if n % 2 else other_store).claims.claim_delivery(
                job.id, ("discord",), due_by=0.0
            )
            for n in range(4)
        )
    )

    [claimed] = [claim for claim in claims if claim is not None]
    assert claimed.status == "reporting"
    assert await store.jobs.transition(job.id, "reporting", "failed")
    assert await store.claims.claim_delivery(job.id, ("discord",), due_by=0.0) is not None
    usage = await store.ledger.usage_for_user("discord", "u1")
    assert (usage.credits, usage.entries) == (8, 1)


async def test_nothing_is_claimed_before_it_is_due_or_without_its_platform(
    store: Store, clock: ManualClock
) -> None:
    job_id = await finished_job(store, next_poll_at=clock.now + 5)

    assert await store.claims.claim_delivery(job_id, ("discord",), due_by=clock.now) is None
    assert await store.claims.claim_delivery(job_id, ("slack", "web"), due_by=clock.now + 5) is None
    assert await store.claims.claim_delivery(job_id, (), due_by=clock.now + 5) is None
    claimed = await store.claims.claim_delivery(job_id, ("slack", "discord"), due_by=clock.now + 5)
    assert claimed is not None and claimed.status == "posting"
    assert await store.claims.claim_delivery("no-such-job", ("discord",), due_by=clock.now) is None


async def test_claims_asked_together_share_one_transaction_and_keep_their_answers(
    store: Store, clock: ManualClock
) -> None:
    finished = [await finished_job(store, requester_id=f"u{n}") for n in range(3)]
    later = await finished_job(store, requester_id="u3", next_poll_at=clock.now + 5)
    failed = await create_job(store.admission, new_job(requester_id="u4"))
    assert await store.jobs.transition(failed.id, "creating", "failed", credits=8)
    counting = counted(store)

    asked: list[tuple[str, tuple[str, ...]]]
    asked = [(job_id, ("discord",)) for job_id in (*finished, finished[0], later, failed.id)]
    asked += [("no-such-job", ("discord",)), (finished[1], ("slack", "discord"))]
    claims = await asyncio.gather(
        *(store.claims.claim_delivery(*ask, due_by=clock.now) for ask in asked)
    )

    assert [job.status if job else None for job in claims] == [
        *["posting"] * 3,
        None,
        None,
        "reporting",
        None,
        None,
    ], "a job asked twice goes to the first asking; one not due stays"
    assert len([trip for trip in counting.trips if trip.claims()]) == 1
    charged = [await store.ledger.usage_for_user("discord", f"u{n}") for n in range(5)]
    assert [(usage.credits, usage.entries) for usage in charged] == [(8, 1)] * 3 + [(0, 0)] * 2


async def test_unfinished_jobs_are_counted_by_status_and_platform(store: Store) -> None:
    for status, platform in (
        ("pending", "discord"),
        ("pending", "discord"),
        ("finished", "slack"),
        ("posted", "discord"),
    ):
        await create_job(store.admission, new_job(status=status, platform=platform))
    assert sorted(await store.tracking.count_unfinished_jobs()) == [
        ("finished", "slack", 1),
        ("pending", "discord", 2),
    ]


async def test_unfinished_job_channels_are_those_the_listing_gives(
    store: Store, clock: ManualClock
) -> None:
    due = await finished_job(store)
    later = await finished_job(store, next_poll_at=clock.now + 5)
    await create_job(store.admission, new_job())
    tracking = store.tracking

    found = await tracking.unfinished_job_channels(("finished", "failed"), due_at=clock.now)

    listed = await tracking.list_unfinished_jobs(("finished", "failed"), due_at=clock.now)
    assert found == [
        JobChannel(job.id, job.platform, job.workspace_id, job.channel_id) for job in listed
    ]
    assert [job.id for job in found] == [due]
    assert await tracking.unfinished_job_channels(("finished",), owner="someone else") == []
    mine = await tracking.unfinished_job_channels(("finished",), owner=store.owner.process_id)
    assert sorted(job.id for job in mine) == sorted([due, later])


async def test_job_briefs_are_the_listings_jobs_in_a_few_columns_and_whole_jobs_read_by_id(
    store: Store, clock: ManualClock
) -> None:
    for n in range(5):
        clock.advance(1)
        await create_job(store.admission, new_job(status="pending", family="task"))
        if n == 2:
            await create_job(store.admission, new_job(status="pending", family="diffusion"))
    [hooked, *_] = await store.tracking.list_unfinished_jobs(("pending",), family="task")
    await store.jobs.update_job(hooked.id, webhook_secret="s", provider_id="t1", last_polled_at=9)
    listed = await store.tracking.list_unfinished_jobs(("pending",), family="task")

    first = await store.tracking.list_job_briefs(("pending",), family="task", limit=3)
    rest = await store.tracking.list_job_briefs(("pending",), family="task", after=first[-1])

    briefs = first + rest
    assert [brief.id for brief in briefs] == [job.id for job in listed]
    assert [(b.status, b.family, b.provider_key, b.created_at) for b in briefs] == [
        (job.status, job.family, job.provider_key, job.created_at) for job in listed
    ]
    assert (briefs[0].provider_id, briefs[0].last_polled_at, briefs[0].webhook) == ("t1", 9, True)
    assert not any(brief.webhook for brief in briefs[1:])
    assert await store.tracking.list_job_briefs(("pending",), owner="someone else") == []
    wanted = [listed[3].id, listed[0].id, "unknown"]
    assert await store.tracking.whole_jobs(wanted) == {
        listed[3].id: listed[3],
        listed[0].id: listed[0],
    }
    running = await store.tracking.list_running(("pending",), limit=4)
    assert running == [
        RunningJob(j.id, j.platform, j.requester_id, j.owner, j.progress_message_id)
        for j in await store.tracking.list_unfinished_jobs(("pending",), limit=4)
    ]


async def test_a_process_holds_jobs_while_one_of_its_own_is_unfinished(
    store: Store, other_store: Store
) -> None:
    mine, theirs = store.owner.process_id, other_store.owner.process_id
    assert not await store.tracking.holds_jobs(mine)
    job = await create_job(other_store.admission, new_job())

    assert await store.tracking.holds_jobs(theirs)
    assert not await store.tracking.holds_jobs(mine)
    assert await other_store.jobs.transition(job.id, "creating", "create_failed")
    assert not await store.tracking.holds_jobs(theirs)
