"""Job leases: the creator holds a job, its heartbeat keeps it, another process takes it over
only once the lease ran out, claims never overlap, and a clean stop hands jobs over at once."""

from __future__ import annotations

import asyncio
import time

import pytest

from storage import ProcessInfo, StorageError, Store
from storage.postgres import PostgresStore
from storage.sql.server_clock import ServerClock
from storage.sql.session import Session
from tests.postgres import PostgresCluster
from tests.storage.conftest import START, Database, ManualClock, new_job
from tests.storage.counting import counted
from tests.storage.helpers import create_job

LEASE = 10.0
MINUTE = 60.0


def process(*platforms: str) -> ProcessInfo:
    return ProcessInfo(host="h", pid=1, platforms=platforms, started_at=START)


async def test_a_new_job_is_leased_to_the_process_that_created_it(
    store: Store, clock: ManualClock
) -> None:
    job = await create_job(store.admission, new_job())
    assert (job.owner, job.lease_until) == (store.owner.process_id, START + LEASE)
    assert store.owner.lease_seconds == LEASE


async def test_a_live_lease_is_never_taken_and_an_expired_one_is_taken_once(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    job = await create_job(store.admission, new_job(status="pending"))
    assert await other_store.leasing.claim_jobs(["discord"], limit=10) == []
    clock.advance(LEASE - 1)
    assert (await store.leasing.heartbeat(process("discord"))).held == {job.id}
    clock.advance(LEASE - 1)
    assert await other_store.leasing.claim_jobs(["discord"], limit=10) == []

    clock.advance(2)
    [taken] = await other_store.leasing.claim_jobs(["discord"], limit=10)
    assert (taken.id, taken.status, taken.owner) == (
        job.id,
        "pending",
        other_store.owner.process_id,
    )
    assert taken.lease_generation == job.lease_generation + 1
    assert await other_store.leasing.claim_jobs(["discord"], limit=10) == []
    assert await store.leasing.claim_jobs(["discord"], limit=10) == []
    assert (await store.leasing.heartbeat(process("discord"))).held == frozenset()
    stored = await store.jobs.get_job(job.id)
    assert stored is not None and stored.owner == other_store.owner.process_id


async def test_only_jobs_of_the_claimers_platforms_are_taken(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    slack = await create_job(store.admission, new_job(platform="slack"))
    await create_job(store.admission, new_job(platform="discord"))
    clock.advance(LEASE + 1)
    taken = await other_store.leasing.claim_jobs(["slack", "web"], limit=10)
    assert [job.id for job in taken] == [slack.id]
    assert await other_store.leasing.claim_jobs([], limit=10) == []


async def test_finished_work_is_not_leased(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    for status in ("posted", "failed_posted", "create_failed"):
        await create_job(store.admission, new_job(status=status))
    clock.advance(LEASE + 1)
    assert await other_store.leasing.claim_jobs(["discord"], limit=10) == []
    assert (await store.leasing.heartbeat(process("discord"))).held == frozenset()


async def test_concurrent_claimers_split_the_expired_jobs_without_overlap(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    created = {(await create_job(store.admission, new_job(status="pending"))).id for _ in range(30)}
    clock.advance(LEASE + 1)
    batches = await asyncio.gather(
        *(
            (store if n % 2 else other_store).leasing.claim_jobs(["discord"], limit=4)
            for n in range(12)
        )
    )
    taken = [job.id for batch in batches for job in batch]
    assert len(taken) == len(set(taken))
    assert set(taken) <= created


async def test_a_heartbeat_writes_one_row_however_many_jobs_it_holds(
    store: Store, clock: ManualClock
) -> None:
    """The heartbeat renewed each held job's lease: a beat rewrote every job its process held
    (about 1,440 rows at 3,000 jobs on PostgreSQL) and held their row locks, which the
    deliveries' moves of those jobs waited for. It renews the process's lease alone."""
    counting = counted(store)
    written: dict[int, int] = {}
    for holding in (3, 30):
        while len(await store.tracking.list_unfinished_jobs()) < holding:
            await create_job(store.admission, new_job(status="pending"))
        clock.advance(LEASE / 4)
        before = len(counting.trips)
        assert len((await store.leasing.heartbeat(process("discord"))).held) == holding
        written[holding] = sum(trip.rows_written for trip in counting.trips[before:])
    assert written == {3: 1, 30: 1}


class StallingClock(ManualClock):
    """A clock that moves ``stall`` seconds at every reading: a database so slow that each step
    of a call takes that long."""

    stall = 0.0

    def __call__(self) -> float:
        self.now += self.stall
        return self.now


async def process_lease(store: Store) -> float | None:
    """Until when ``store``'s process holds its jobs (None: no lease)."""
    sql = "SELECT lease_until FROM processes WHERE id = ?"
    row = await store.db.fetch_one(sql, (store.owner.process_id,))
    return None if row is None else float(row["lease_until"])


async def test_a_renewal_written_after_its_leases_ran_out_is_rolled_back(
    database: Database,
) -> None:
    clock = StallingClock()
    store = await database.open(clock)
    try:
        job = await create_job(store.admission, new_job(status="pending"))
        clock.stall = LEASE
        with pytest.raises(StorageError, match="longer than a lease"):
            await store.leasing.heartbeat(process("discord"))
        clock.stall = 0.0
        assert await process_lease(store) is None
        clock.stall = LEASE / 2
        assert (await store.leasing.heartbeat(process("discord"))).held == {job.id}
        renewed = await process_lease(store)
        assert renewed is not None and renewed > (job.lease_until or 0)
    finally:
        await store.close()


async def test_a_heartbeat_writes_no_job_row_so_it_waits_for_none(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    """The renewal of each job's lease waited for rows other transactions held while holding
    the rest, and deadlocked with a move of several jobs taking their rows in another order
    (PostgreSQL aborted the move: a job's start or a batch of deliveries failed); then it
    skipped them, and the moves waited for the rows it held. It touches no job row now, and
    the process's lease holds its jobs past their own."""
    if not isinstance(store, PostgresStore):
        pytest.skip("SQLite runs one write transaction at a time")
    busy = await create_job(store.admission, new_job(status="pending"))
    free = await create_job(store.admission, new_job(status="pending"))
    holding, release = asyncio.Event(), asyncio.Event()

    async def hold(tx: Session) -> None:
        await tx.execute("SELECT id FROM jobs WHERE id = ? FOR UPDATE", (busy.id,))
        holding.set()
        await release.wait()

    held = asyncio.create_task(store.db.transaction(hold))
    await holding.wait()
    clock.advance(LEASE / 2)
    try:
        async with asyncio.timeout(5):
            assert (await store.leasing.heartbeat(process("discord"))).held == {busy.id, free.id}
    finally:
        release.set()
        await held
    leases = {job.id: job.lease_until for job in await store.tracking.list_unfinished_jobs()}
    assert leases == {busy.id: busy.lease_until, free.id: free.lease_until}
    clock.advance(LEASE / 2 + 1)
    assert await other_store.leasing.claim_jobs(["discord"], limit=10) == []


async def test_a_job_keeps_the_lease_it_was_created_with_when_its_owners_ran_out(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    await store.leasing.heartbeat(process("discord"))
    clock.advance(LEASE - 1)
    job = await create_job(store.admission, new_job(status="pending"))
    clock.advance(2)
    assert await other_store.leasing.claim_jobs(["discord"], limit=10) == []
    clock.advance(LEASE)
    assert [taken.id for taken in await other_store.leasing.claim_jobs(["discord"], limit=10)] == [
        job.id
    ]


async def test_taking_live_leases_is_for_a_single_process_restart(
    store: Store, other_store: Store
) -> None:
    job = await create_job(store.admission, new_job(status="posting"))
    [taken] = await other_store.leasing.claim_jobs(["discord"], limit=10, take_live=True)
    assert (taken.id, taken.status) == (job.id, "posting")
    assert await other_store.leasing.claim_jobs(["discord"], limit=10, take_live=True) == []


async def test_a_clean_stop_hands_its_jobs_over_at_once(store: Store, other_store: Store) -> None:
    job = await create_job(store.admission, new_job(status="processing"))
    await store.leasing.heartbeat(process("discord"))
    assert await store.leasing.release_leases() == 1
    [taken] = await other_store.leasing.claim_jobs(["discord"], limit=10)
    assert taken.id == job.id


async def test_a_cancelled_job_is_handed_over_and_taken_like_one_in_flight(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    job = await create_job(store.admission, new_job(status="processing"))
    assert await store.jobs.transition(job.id, "processing", "cancelled")
    assert (await store.leasing.heartbeat(process("discord"))).held == {job.id}
    assert await store.leasing.release_leases() == 1
    [taken] = await other_store.leasing.claim_jobs(["discord"], limit=10)
    assert (taken.id, taken.status) == (job.id, "cancelled")
    clock.advance(LEASE + 1)
    [again] = await store.leasing.claim_jobs(["discord"], limit=10)
    assert again.id == job.id


async def test_only_the_owner_claims_a_delivery(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    job = await create_job(store.admission, new_job())
    assert await store.jobs.transition(job.id, "creating", "finished")
    assert await other_store.claims.claim_delivery(job.id, ["discord"], due_by=clock.now) is None
    claimed = await store.claims.claim_delivery(job.id, ["discord"], due_by=clock.now)
    assert claimed is not None and claimed.status == "posting"


async def test_tracking_queries_can_keep_to_one_owners_jobs(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    mine = await create_job(store.admission, new_job(status="processing"))
    theirs = await create_job(other_store.admission, new_job(status="processing"))
    for job in (mine, theirs):
        await store.jobs.update_job(job.id, next_poll_at=clock.now + 5)
    listed = await store.tracking.list_unfinished_jobs(owner=store.owner.process_id)
    assert [job.id for job in listed] == [mine.id]
    everyone = await store.tracking.list_unfinished_jobs()
    assert {job.id for job in everyone} == {mine.id, theirs.id}
    next_poll = await other_store.tracking.next_poll_after(
        ["processing"], clock.now, owner=other_store.owner.process_id
    )
    assert next_poll == clock.now + 5
    assert await store.tracking.next_poll_after(["processing"], clock.now, owner="nobody") is None


async def test_a_write_fenced_with_a_lost_lease_changes_nothing(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    job = await create_job(store.admission, new_job(status="pending"))
    assert await store.jobs.transition(job.id, "pending", "finished")
    claimed = await store.claims.claim_delivery(job.id, ["discord"], due_by=clock.now)
    assert claimed is not None and claimed.lease is not None
    clock.advance(LEASE + 1)
    [taken] = await other_store.leasing.claim_jobs(["discord"], limit=10)

    assert not await store.jobs.transition(job.id, "posting", "posted", fence=claimed.lease)
    assert await other_store.jobs.transition(job.id, "posting", "finished", fence=taken.lease)
    stored = await store.jobs.get_job(job.id)
    assert stored is not None and stored.status == "finished"
    assert stored.lease == taken.lease != claimed.lease


async def test_the_fair_share_divides_each_platforms_jobs_among_its_live_processes(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    for n in range(10):
        await create_job(
            store.admission, new_job(status="pending", platform="web" if n < 7 else "slack")
        )
    shared = isinstance(store, PostgresStore)
    alone = await store.leasing.heartbeat(process("web", "slack"), share_of=["web", "slack"])
    assert alone.share == 10
    beside = await other_store.leasing.heartbeat(process("web"), share_of=["web"])
    assert beside.share == (4 if shared else 7)
    again = await store.leasing.heartbeat(process("web", "slack"), share_of=["web", "slack"])
    assert again.share == (4 + 3 if shared else 10)
    assert (await store.leasing.heartbeat(process("web", "slack"))).share == 0
    clock.advance(LEASE + 1)
    again = await store.leasing.heartbeat(process("web", "slack"), share_of=["web", "slack"])
    assert again.share == 10


async def test_shedding_gives_back_the_newest_jobs_in_flight_for_others_to_claim(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    jobs = []
    for status in ("pending", "processing", "posting", "creating", "submitted"):
        clock.advance(1)
        jobs.append(await create_job(store.admission, new_job(status=status)))
    if not isinstance(store, PostgresStore):
        assert await store.leasing.shed_leases(2) == 0
        return
    assert await store.leasing.shed_leases(2) == 2
    given = [job.id for job in await other_store.leasing.claim_jobs(["discord"], limit=10)]
    assert sorted(given) == sorted([jobs[1].id, jobs[4].id])
    assert (await store.leasing.heartbeat(process("discord"))).held == {
        jobs[0].id,
        jobs[2].id,
        jobs[3].id,
    }


async def server_now(store: Store) -> float:
    row = await store.db.fetch_one("SELECT EXTRACT(EPOCH FROM clock_timestamp()) AS now")
    assert row is not None
    return float(row["now"])


def host_clock(ahead_by: float) -> ServerClock:
    """The server's clock on a host whose wall clock is ``ahead_by`` seconds ahead."""
    return ServerClock(lambda: time.time() + ahead_by)


async def test_hosts_a_minute_apart_keep_each_others_live_leases_and_take_a_dead_ones(
    postgres: PostgresCluster,
) -> None:
    """Each store compared leases with its host's wall clock: a host a minute ahead took a live
    process's jobs at once, and one behind left a dead process's jobs a minute past their
    lease. Both compare with the database server's clock now."""
    url, lease = postgres.create_schema(), 3.0
    async with (
        await PostgresStore.open(url, lease_seconds=lease, clock=host_clock(MINUTE)) as ahead,
        await PostgresStore.open(url, lease_seconds=lease, clock=host_clock(0.0)) as on_time,
    ):
        jobs = {
            store: await create_job(store.admission, new_job(status="pending"))
            for store in (ahead, on_time)
        }
        for store in (ahead, on_time):
            await store.leasing.heartbeat(process("discord"))
        last_beat = await server_now(on_time)
        for store in (ahead, on_time):
            assert await store.leasing.claim_jobs(["discord"], limit=10) == [], "both are live"
        await asyncio.sleep(last_beat + lease + 0.2 - await server_now(on_time))
        taken = await on_time.leasing.claim_jobs(["discord"], limit=10)
        assert [job.id for job in taken] == [jobs[ahead].id]


async def test_a_heartbeat_brings_a_clock_that_drifted_back_to_the_servers_in_its_round_trip(
    postgres: PostgresCluster,
) -> None:
    """The store's clock was read once, at open: a host clock that drifted or stepped since
    (here the monotonic clock the server's is carried by, a minute) stayed off the others'."""
    url, drift = postgres.create_schema(), [0.0]
    clock = ServerClock(monotonic=lambda: time.monotonic() + drift[0])
    async with (
        await PostgresStore.open(url, clock=clock) as store,
        await PostgresStore.open(url, clock=time.time) as plain,
    ):
        drift[0] = MINUTE
        counting, plain_counting = counted(store), counted(plain)
        await store.leasing.heartbeat(process("discord"))
        await plain.leasing.heartbeat(process("discord"))
        before = await server_now(store)
        job = await create_job(store.admission, new_job())
        after = await server_now(store)
        assert before - 1 <= job.created_at <= after + 1
        assert [t.sends for t in counting.trips[:1]] == [t.sends for t in plain_counting.trips]


def test_the_lease_index_predicate_names_every_unfinished_status() -> None:
    from storage.records.jobs import UNFINISHED_STATUSES
    from storage.sql.schema import UNFINISHED_LITERALS

    assert ", ".join(f"'{status}'" for status in sorted(UNFINISHED_STATUSES)) == UNFINISHED_LITERALS
