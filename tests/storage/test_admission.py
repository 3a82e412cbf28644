"""Quota-checked job creation (one transaction), the ``unknown`` status, delivery attempts and
the tracker's scheduling queries."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from storage import (
    ACTIVE_STATUSES,
    ALL_STATUSES,
    IN_FLIGHT_STATUSES,
    JobQuota,
    KeyRoom,
    QuotaRefusal,
    StorageError,
    Store,
)
from storage.queries.admission import KEYS_LOCK
from storage.records.usage import DAY, HOUR
from tests.storage.conftest import Database, ManualClock, PostgresSchema, new_job
from tests.storage.counting import Trip, counted
from tests.storage.helpers import (
    create_job,
    holding,
    terminate_table_waiters,
    until_waiting_for_lock,
    until_waiting_for_table,
)


async def test_concurrent_creations_cannot_all_pass_the_cap(
    store: Store, other_store: Store
) -> None:
    quota = JobQuota(max_active=1)
    outcomes = await asyncio.gather(
        *(
            (store if n % 2 else other_store).admission.create_job_within(
                new_job(prompt=f"f{n}"), quota
            )
            for n in range(5)
        )
    )

    created = [o for o in outcomes if not isinstance(o, QuotaRefusal)]
    refused = [o for o in outcomes if isinstance(o, QuotaRefusal)]
    assert len(created) == 1 and created[0][1] is True
    assert refused == [QuotaRefusal("max_active", 1, 1)] * 4
    assert len(await store.tracking.list_unfinished_jobs(ACTIVE_STATUSES)) == 1


async def test_two_copies_of_a_command_in_flight_get_one_job_and_no_refusal(
    database: Database, store: Store, other_store: Store
) -> None:
    """The copies looked for the command's job before the requester's lock: both found none,
    and the second, let in once the first had committed, counted its job against the cap and
    was refused instead of getting it (a playground resend while the first was waiting)."""
    if not isinstance(database, PostgresSchema):
        pytest.skip("SQLite runs one write transaction at a time")
    lock = store.db.dialect.transaction_lock
    assert lock is not None
    requester = "discord\x1fu1"
    async with holding(store.db, lock, (requester,)):
        command, quota = new_job(command_key="web:m1"), JobQuota(max_active=1)
        copies = [
            asyncio.create_task(each.admission.create_job_within(command, quota))
            for each in (store, other_store)
        ]
        await until_waiting_for_lock(database.url, requester, 2)
    outcomes = await asyncio.gather(*copies)

    assert not any(isinstance(outcome, QuotaRefusal) for outcome in outcomes), outcomes
    jobs = {outcome[0].id for outcome in outcomes if not isinstance(outcome, QuotaRefusal)}
    made = sorted(outcome[1] for outcome in outcomes if not isinstance(outcome, QuotaRefusal))
    assert len(jobs) == 1 and made == [False, True]


async def test_credits_are_counted_in_the_day_the_requesters_lock_was_granted_in(
    database: Database, store: Store, other_store: Store, clock: ManualClock
) -> None:
    """The credits were read in the window of the moment the reads were sent: a wait for the
    requester's lock across 00:00 UTC counted yesterday's credits and missed today's."""
    if not isinstance(database, PostgresSchema):
        pytest.skip("SQLite runs one write transaction at a time")
    lock = store.db.dialect.transaction_lock
    assert lock is not None
    midnight = datetime(2024, 3, 2, tzinfo=UTC).timestamp()
    clock.now = midnight - 1
    await store.ledger.add_usage("discord", "u1", credits=3, kind="credits", job_id="yesterday")
    requester = "discord\x1fu1"
    quota = JobQuota(max_daily_credits=4)
    async with holding(store.db, lock, (requester,)):
        creation = asyncio.create_task(store.admission.create_job_within(new_job(), quota))
        await until_waiting_for_lock(database.url, requester)
        clock.advance(2)
        await other_store.ledger.add_usage("discord", "u1", credits=4, kind="credits", job_id="t")

    assert await creation == QuotaRefusal("max_daily_credits", 4, 4, refills_at=midnight + DAY)


async def test_credits_are_counted_in_the_hour_the_requesters_lock_was_granted_in(
    database: Database, store: Store, other_store: Store, clock: ManualClock
) -> None:
    """With hourly refills the window moves every hour: a wait for the requester's lock across
    14:00 counted the hour that had just left the window (and said it refilled at 14:00, already
    past)."""
    if not isinstance(database, PostgresSchema):
        pytest.skip("SQLite runs one write transaction at a time")
    lock = store.db.dialect.transaction_lock
    assert lock is not None
    hour = datetime(2024, 3, 2, 14, tzinfo=UTC).timestamp()
    clock.now = hour - 1
    await store.ledger.add_usage(
        "discord", "u1", credits=3, kind="credits", job_id="old", at=hour - 23.5 * HOUR
    )
    requester = "discord\x1fu1"
    quota = JobQuota(max_daily_credits=4, refill="hourly")
    async with holding(store.db, lock, (requester,)):
        creation = asyncio.create_task(store.admission.create_job_within(new_job(), quota))
        await until_waiting_for_lock(database.url, requester)
        clock.advance(2)
        await other_store.ledger.add_usage("discord", "u1", credits=1, kind="credits", job_id="t")

    outcome = await creation
    assert not isinstance(outcome, QuotaRefusal), outcome
    assert outcome[1] is True


async def test_the_cap_counts_unknown_jobs_and_ignores_other_users(store: Store) -> None:
    quota = JobQuota(max_active=2)
    first = await store.admission.create_job_within(new_job(), quota)
    assert not isinstance(first, QuotaRefusal)
    assert await store.jobs.transition(first[0].id, "creating", "unknown")
    assert not isinstance(await store.admission.create_job_within(new_job(), quota), QuotaRefusal)

    assert await store.admission.create_job_within(new_job(), quota) == QuotaRefusal(
        "max_active", 2, 2
    )
    other = await store.admission.create_job_within(new_job(requester_id="u2"), quota)
    assert not isinstance(other, QuotaRefusal)
    unlimited = await store.admission.create_job_within(new_job(), JobQuota())
    assert not isinstance(unlimited, QuotaRefusal)


async def test_the_cap_counts_cancelled_jobs_until_the_provider_is_done(store: Store) -> None:
    """A refusal says how many of the jobs it counts are cancelled ones."""
    quota = JobQuota(max_active=2)
    await create_job(store.admission, new_job(status="processing", provider_id="t1"))
    job = await create_job(store.admission, new_job(status="processing", provider_id="t2"))
    assert await store.jobs.transition(job.id, "processing", "cancelled")

    refusal = QuotaRefusal("max_active", 2, 2, cancelled=1)
    assert await store.admission.create_job_within(new_job(), quota) == refusal
    assert await store.admission.quota_refusal("discord", "u1", quota) == refusal
    assert await store.jobs.transition(job.id, "cancelled", "failed")
    assert not isinstance(await store.admission.create_job_within(new_job(), quota), QuotaRefusal)


async def test_a_job_cancelled_while_unknown_gives_its_place_back_at_once(store: Store) -> None:
    """qa D6: the provider never confirmed it, so it stops counting when it is cancelled, not
    when it times out; one cancelled after the provider confirmed it still counts."""
    quota = JobQuota(max_active=2)
    confirmed = await create_job(store.admission, new_job(status="processing", provider_id="t1"))
    assert await store.jobs.transition(confirmed.id, "processing", "cancelled")
    unconfirmed = await create_job(store.admission, new_job(status="unknown"))
    refusal = QuotaRefusal("max_active", 2, 2, cancelled=1)
    assert await store.admission.quota_refusal("discord", "u1", quota) == refusal

    assert await store.jobs.transition(unconfirmed.id, "unknown", "cancelled")
    assert await store.admission.quota_refusal("discord", "u1", quota) is None
    assert not isinstance(await store.admission.create_job_within(new_job(), quota), QuotaRefusal)


async def test_the_daily_credit_budget_is_checked_for_the_current_day(
    store: Store, clock: ManualClock
) -> None:
    quota = JobQuota(max_daily_credits=4)
    await store.ledger.add_usage("discord", "u1", credits=4, kind="credits", job_id="old")
    midnight = datetime(2024, 3, 2, tzinfo=UTC).timestamp()
    assert await store.admission.create_job_within(new_job(), quota) == QuotaRefusal(
        "max_daily_credits", 4, 4, refills_at=midnight
    )
    clock.advance(24 * 3600)
    assert not isinstance(await store.admission.create_job_within(new_job(), quota), QuotaRefusal)


async def test_an_hourly_budget_counts_the_last_24_hours_in_any_process(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    quota = JobQuota(max_daily_credits=10, refill="hourly")
    at = clock.now + 25 * 60  # 12:25 UTC on March 1
    await store.ledger.add_usage("discord", "u1", credits=6, kind="credits", job_id="a", at=at)
    clock.advance(3 * 3600)  # 15:00
    await other_store.ledger.add_usage("discord", "u1", credits=5, kind="credits", job_id="b")

    refusal = await other_store.admission.create_job_within(new_job(), quota)
    back = datetime(2024, 3, 2, 12, tzinfo=UTC).timestamp()
    assert refusal == QuotaRefusal("max_daily_credits", 11, 10, refills_at=back)
    assert await store.admission.quota_refusal("discord", "u1", quota) == refusal
    spent = await store.ledger.spent("discord", "u1", "hourly")
    assert (spent.credits, spent.refills_at(12), spent.refills_at(5)) == (11, back, back + 3 * 3600)

    clock.now = datetime(2024, 3, 2, 11, 59, tzinfo=UTC).timestamp()
    assert isinstance(await store.admission.create_job_within(new_job(), quota), QuotaRefusal)
    clock.advance(60)  # 12:00 on March 2: the 6 credits of 12:25 yesterday are back
    created = await other_store.admission.create_job_within(new_job(), quota)
    assert not isinstance(created, QuotaRefusal)
    daily = JobQuota(max_daily_credits=5)
    assert await store.admission.quota_refusal("discord", "u1", daily) is None


async def test_an_existing_derivative_is_returned_without_a_quota_check(store: Store) -> None:
    parent = await create_job(store.admission, new_job())
    quota = JobQuota(max_active=1)
    derived = new_job(parent_job_id=parent.id, action="upscale1")
    assert await store.admission.create_job_within(derived, quota) == QuotaRefusal(
        "max_active", 1, 1
    )
    await store.jobs.transition(parent.id, "creating", "finished")

    made = await store.admission.create_job_within(derived, quota)
    assert not isinstance(made, QuotaRefusal) and made[1] is True
    again = await store.admission.create_job_within(derived, quota)
    assert again == (made[0], False)


async def test_unknown_jobs_may_be_adopted_or_fail_but_never_be_refused(store: Store) -> None:
    assert "unknown" in ACTIVE_STATUSES and "unknown" not in IN_FLIGHT_STATUSES
    job = await create_job(store.admission, new_job())
    assert await store.jobs.transition(job.id, "creating", "unknown", error="no answer")
    with pytest.raises(StorageError, match="cannot go from 'unknown' to 'create_failed'"):
        await store.jobs.transition(job.id, "unknown", "create_failed")
    assert await store.jobs.transition(job.id, "unknown", "processing", provider_id="task-1")
    adopted = await store.jobs.get_job(job.id)
    assert adopted is not None and adopted.provider_id == "task-1"


async def test_delivery_attempts_are_stored(store: Store) -> None:
    job = await create_job(store.admission, new_job())
    assert job.delivery_attempts == 0
    assert await store.jobs.update_job(job.id, delivery_attempts=3)
    stored = await store.jobs.get_job(job.id)
    assert stored is not None and stored.delivery_attempts == 3


async def test_stale_jobs_and_the_next_scheduled_poll(store: Store, clock: ManualClock) -> None:
    old = await create_job(store.admission, new_job(prompt="old"))
    clock.advance(100)
    young = await create_job(store.admission, new_job(prompt="young"))
    stale = await store.tracking.list_unfinished_jobs(created_before=clock.now - 50)
    assert [job.id for job in stale] == [old.id]

    assert await store.tracking.next_poll_after(["processing", "finished"], clock.now) is None
    await store.jobs.transition(old.id, "creating", "finished", next_poll_at=clock.now + 30)
    await store.jobs.transition(young.id, "creating", "processing", next_poll_at=clock.now + 10)
    assert (
        await store.tracking.next_poll_after(["processing", "finished"], clock.now)
        == clock.now + 10
    )
    assert await store.tracking.next_poll_after(["finished"], clock.now) == clock.now + 30
    assert await store.tracking.next_poll_after(["finished"], clock.now + 30) is None


async def test_the_quota_can_be_read_before_costly_work(store: Store) -> None:
    """What a command checks before it downloads anything: the requester's caps, with the jobs
    about to be created counted, writing nothing."""
    active, budget = JobQuota(max_active=2), JobQuota(max_daily_credits=4)
    assert await store.admission.quota_refusal("discord", "u1", active) is None
    assert await store.admission.quota_refusal("discord", "u1", active, pending=2) == QuotaRefusal(
        "max_active", 2, 2
    )
    await store.admission.create_job_within(new_job(), active)
    assert await store.admission.quota_refusal("discord", "u1", active, pending=1) == QuotaRefusal(
        "max_active", 2, 2
    )
    assert await store.admission.quota_refusal("discord", "u2", active, pending=1) is None
    await store.ledger.add_usage("discord", "u1", credits=4, kind="credits")
    midnight = datetime(2024, 3, 2, tzinfo=UTC).timestamp()
    assert await store.admission.quota_refusal("discord", "u1", budget) == QuotaRefusal(
        "max_daily_credits", 4, 4, midnight
    )
    assert await store.admission.quota_refusal("discord", "u1", JobQuota(), pending=9) is None
    assert len(await store.tracking.list_unfinished_jobs(ALL_STATUSES)) == 1


async def test_the_quota_read_before_costly_work_runs_again_when_its_connection_is_lost(
    database: Database, store: Store, other_store: Store
) -> None:
    """Sent together, the reads were no longer repeated like other reads: a connection lost
    under them failed the command."""
    if not isinstance(database, PostgresSchema):
        pytest.skip("SQLite has no connection to lose")
    await store.ledger.add_usage("discord", "u1", credits=4, kind="credits")
    quota = JobQuota(max_active=2, max_daily_credits=4)
    async with holding(other_store.db, "LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE"):
        read = asyncio.create_task(store.admission.quota_refusal("discord", "u1", quota))
        await until_waiting_for_table(database.url, "jobs")
        assert await terminate_table_waiters(database.url, "jobs") == 1
    midnight = datetime(2024, 3, 2, tzinfo=UTC).timestamp()
    assert await read == QuotaRefusal("max_daily_credits", 4, 4, midnight)


def keys_locked(trip: Trip) -> bool:
    return any(values == (KEYS_LOCK,) for _, values in trip.statements)


async def test_a_commands_job_is_created_in_two_sends(store: Store) -> None:
    """The requester's lock, the look for the command's job and the limits' reads go together,
    in that order, the row in a second, so the lock is held over the insert and the commit
    alone (six sends on PostgreSQL without it, each a round trip); a key without caps is chosen
    without the lock on choosing keys, which serialises every requester's creations."""
    trips = counted(store).trips
    quota = JobQuota(max_active=5, max_daily_credits=100)
    command = new_job(command_key="web:m1")

    made = await store.admission.create_job_within(command, quota, [KeyRoom("main")])
    assert not isinstance(made, QuotaRefusal) and made[1] is True
    assert made[0].provider_key == "main"
    assert [trip.sends for trip in trips] == [2]
    assert not keys_locked(trips[0])

    assert await store.admission.create_job_within(command, quota) == (made[0], False)
    assert [trip.sends for trip in trips[1:]] == [1], "the command's job found, nothing written"

    capped = [KeyRoom("capped", max_concurrent=2), KeyRoom("main")]
    other = await store.admission.create_job_within(new_job(prompt="b"), quota, capped)
    assert not isinstance(other, QuotaRefusal) and other[0].provider_key == "capped"
    locking = store.db.dialect.transaction_lock is not None
    assert keys_locked(trips[2]) is locking, "a cap counted: choosing keys is serialised"


async def test_the_quota_read_before_costly_work_is_one_send(store: Store) -> None:
    await store.ledger.add_usage("discord", "u1", credits=1, kind="credits")
    quota = JobQuota(max_active=2, max_daily_credits=4)
    trips = counted(store).trips
    assert await store.admission.quota_refusal("discord", "u1", quota, pending=1) is None
    assert [trip.sends for trip in trips] == [1], "the active jobs and the credits together"
    assert await store.admission.quota_refusal("discord", "u1", quota, pending=2) == QuotaRefusal(
        "max_active", 2, 2
    )
