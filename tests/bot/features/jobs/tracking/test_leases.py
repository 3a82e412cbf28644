"""Job leases across processes on PostgreSQL: a dead process's jobs are taken over and posted
once, a live process keeps its own (and polls only its own), a webhook received elsewhere
wakes the owner, settling what a heartbeat took over neither holds up the next heartbeat nor
is cut short by its deadline, a heartbeat slower than a beat counts as a stall, a beat
writes one row however many jobs its process holds, and an idle beat is one transaction."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prometheus_client import REGISTRY

from bot.api import ProviderClient
from bot.features.jobs.tracking.leases import BEATS_PER_LEASE, Leases
from bot.features.jobs.wording import RESTARTED_WHILE_CREATING
from bot.kernel import Command, MessageRef, OutMessage, SurfaceRegistry, User
from bot.outbox import Outbox
from genbot.compose import JobEngines, build_job_engines
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from simulator.task_model import fetch_record
from storage import Heartbeat, Job, JobLeasing, NewJob, ProcessInfo
from storage.postgres import PostgresStore
from storage.queries.leasing import SQL_LOAD
from tests.bot.features.jobs.proxy import FaultyProxy, faulty_proxy
from tests.bot.features.jobs.support import eventually
from tests.bot.harness import PLACE, ROOMY, harness_settings
from tests.fakes.platform import FakePlatform
from tests.postgres import PostgresCluster
from tests.storage.counting import counted
from tests.storage.helpers import create_job

MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)
ALICE_IMAGINES = Command(user=User("alice"), place=PLACE, name="imagine")
LEASE = 0.4
"""The lease of tests where one live process works alone (the others are dead or gone)."""
SHARED_LEASE = 2.0
"""The lease of tests where live processes must each keep theirs: a heartbeat late by a whole
lease (an event loop starved on a loaded machine, as in a land's parallel run) makes a live
process look dead to the others, and 0.4 s was not enough there (the join test failed so)."""


@dataclass
class Process:
    """One genbot process's job machinery on the shared database."""

    engines: JobEngines
    store: PostgresStore


@asynccontextmanager
async def process_on(
    sim: RunningSimulator,
    url: str,
    platform: FakePlatform,
    *,
    dies: bool = False,
    lease: float = LEASE,
    api_url: str | None = None,
    **limits: Any,
) -> AsyncIterator[Process]:
    """A process (talking to ``sim`` through ``api_url`` when given); one that ``dies`` ends
    without stopping its tracker (so without releasing its leases), as ``kill -9`` would."""
    settings = harness_settings(
        api_url or sim.base_url, Path("unused.db"), webhooks=False, limits=limits
    )
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(
            await PostgresStore.open(url, lease_seconds=lease, pool_size=4)
        )
        provider = await stack.enter_async_context(ProviderClient(settings.api))
        surfaces = SurfaceRegistry([platform])
        engines = build_job_engines(settings, store, provider, Outbox(surfaces))
        stack.push_async_callback(engines.media.aclose)
        if not dies:
            stack.push_async_callback(engines.tracker.stop)
        yield Process(engines, store)


async def jobs_of(process: Process, jobs: list[Job]) -> list[Job]:
    found = [await process.store.jobs.get_job(job.id) for job in jobs]
    return [job for job in found if job is not None]


async def test_a_dead_processs_jobs_are_taken_over_and_each_posted_once(
    postgres: PostgresCluster,
) -> None:
    url, platform = postgres.create_database(), FakePlatform(profile=ROOMY)
    async with serve(MANUAL) as sim:
        async with process_on(sim, url, platform, dies=True) as dead:
            created = [
                await dead.engines.images.imagine(ALICE_IMAGINES, f"a fox {n}") for n in range(3)
            ]
        assert {job.owner for job in created} == {dead.store.owner.process_id}
        sim.advance(120)
        async with process_on(sim, url, platform) as survivor:
            await survivor.engines.tracker.start()
            await platform.wait_for(lambda: len(platform.with_images()) == 3 or None, 15)
            await survivor.engines.tracker.wait_idle()
            done = await jobs_of(survivor, created)
            assert {job.status for job in done} == {"posted"}
            assert {job.owner for job in done} == {survivor.store.owner.process_id}
            assert survivor.engines.tracker.leases.taken_over == 3
            assert len(platform.with_images()) == 3
            assert len({job.result_message_id for job in done}) == 3


async def test_a_live_process_keeps_its_jobs_and_posts_them_itself(
    postgres: PostgresCluster,
) -> None:
    url, platform, lease = postgres.create_database(), FakePlatform(profile=ROOMY), 2.0
    async with serve(MANUAL) as sim, process_on(sim, url, platform, lease=lease) as owner:
        await owner.engines.tracker.start()
        jobs = [await owner.engines.images.imagine(ALICE_IMAGINES, f"a fox {n}") for n in range(2)]
        first_lease_ends = max(job.lease_until or 0.0 for job in jobs)
        async with process_on(sim, url, platform, lease=lease) as other:
            await other.engines.tracker.start()
            beats = other.engines.tracker.leases
            await asyncio.sleep(max(first_lease_ends - time.time(), 0.0) + lease / 2)
            await beats.beat()
            assert beats.taken_over == 0
            assert {job.owner for job in await jobs_of(other, jobs)} == {
                owner.store.owner.process_id
            }
            sim.advance(120)
            await platform.wait_for(lambda: len(platform.with_images()) == 2 or None, 15)
            await owner.engines.tracker.wait_idle()
            assert {job.status for job in await jobs_of(owner, jobs)} == {"posted"}
            assert beats.taken_over == 0
            assert len(platform.with_images()) == 2


async def test_a_webhook_received_by_another_process_wakes_the_owner(
    postgres: PostgresCluster,
) -> None:
    url, platform = postgres.create_database(), FakePlatform(profile=ROOMY)
    slow: dict[str, Any] = {"poll_interval_min": 60.0, "poll_interval_max": 120.0, "lease": 2.0}
    async with serve(MANUAL) as sim, process_on(sim, url, platform, **slow) as owner:
        job = await owner.engines.images.imagine(ALICE_IMAGINES, "a fox")
        await owner.engines.tracker.start()
        await eventually(lambda: owner.engines.tracker.rounds == 1)
        async with process_on(sim, url, platform, **slow) as receiver:
            sim.advance(120)
            record = fetch_record(sim.state.tasks[job.provider_id or ""], sim.state.now())
            stored = await receiver.store.jobs.get_job(job.id)
            assert stored is not None
            assert await receiver.engines.tracker.on_webhook(stored, json.dumps(record).encode())
            await platform.wait_for(lambda: platform.with_images() or None, 10)
            await owner.engines.tracker.wait_idle()
            assert receiver.engines.tracker.leases.taken_over == 0
        posted = await owner.store.jobs.get_job(job.id)
        assert posted is not None and posted.status == "posted"
        assert owner.engines.tracker.rounds == 1
        assert len(platform.with_images()) == 1


async def test_a_webhook_received_by_another_process_adopts_an_unknown_job_for_its_owner(
    postgres: PostgresCluster,
) -> None:
    # The owner lost the creation's answer: only the notification names the task. The
    # receiving process reads that task (never taking the record on its word) and wakes the
    # owner, which posts the result.
    url, platform = postgres.create_database(), FakePlatform(profile=ROOMY)
    slow: dict[str, Any] = {"poll_interval_min": 60.0, "poll_interval_max": 120.0, "lease": 2.0}
    async with (
        serve(MANUAL) as sim,
        faulty_proxy(sim.base_url) as proxy,
        process_on(sim, url, platform, api_url=proxy.base_url, **slow) as owner,
    ):
        proxy.faults["/gen/v2/imagine"] = ["lose"]
        job = await owner.engines.images.imagine(ALICE_IMAGINES, "a fox")
        assert job.status == "unknown" and job.provider_id is None
        await owner.engines.tracker.start()
        await eventually(lambda: owner.engines.tracker.rounds == 1)
        async with process_on(sim, url, platform, **slow) as receiver:
            sim.advance(120)
            (task_id,) = sim.state.tasks
            record = fetch_record(sim.state.tasks[task_id], sim.state.now())
            record["task_result"]["image_url"] = "https://evil.example.com/x.png"
            stored = await receiver.store.jobs.get_job(job.id)
            assert stored is not None
            assert await receiver.engines.tracker.on_webhook(stored, json.dumps(record).encode())
            await platform.wait_for(lambda: platform.with_images() or None, 10)
            await owner.engines.tracker.wait_idle()
        posted = await owner.store.jobs.get_job(job.id)
        assert posted is not None and posted.status == "posted" and posted.provider_id == task_id
        assert "https://evil.example.com/x.png" not in posted.result_urls
        assert owner.engines.tracker.rounds == 1


def task_ids_read(proxy: FaultyProxy) -> list[str]:
    """Every task id the provider was asked about (fetch and multi_fetch) through ``proxy``."""
    read: list[str] = []
    for path, body in proxy.forwarded:
        if path == "/gen/v2/multi_fetch":
            read += json.loads(body)["task_ids"]
        elif path == "/gen/v2/fetch":
            read.append(json.loads(body)["task_id"])
    return read


async def test_each_process_polls_only_the_jobs_it_owns(postgres: PostgresCluster) -> None:
    url, platform = postgres.create_database(), FakePlatform(profile=ROOMY)
    roomy: dict[str, Any] = {"lease": 5.0, "max_concurrent_jobs_per_user": 6}
    async with (
        serve(MANUAL) as sim,
        faulty_proxy(sim.base_url) as via_first,
        faulty_proxy(sim.base_url) as via_second,
        process_on(sim, url, platform, api_url=via_first.base_url, **roomy) as first,
        process_on(sim, url, platform, api_url=via_second.base_url, **roomy) as second,
    ):
        owned = {
            via: (
                process.store.owner.process_id,
                [
                    await process.engines.images.imagine(ALICE_IMAGINES, f"a fox {n}")
                    for n in (1, 2, 3)
                ],
            )
            for via, process in ((via_first, first), (via_second, second))
        }
        for process in (first, second):
            await process.engines.tracker.start()
        await eventually(
            lambda: (
                all(len(set(task_ids_read(via))) >= 3 for via in owned)
                and min(first.engines.tracker.rounds, second.engines.tracker.rounds) >= 5
            ),
            timeout=15,
        )
        sim.advance(120)
        await platform.wait_for(lambda: len(platform.with_images()) == 6 or None, 15)
        for process in (first, second):
            await process.engines.tracker.wait_idle()
            assert process.engines.tracker.leases.taken_over == 0

    for via, (owner, jobs) in owned.items():
        assert {job.owner for job in jobs} == {owner}
        assert set(task_ids_read(via)) == {job.provider_id for job in jobs}, "its own, all"
    assert not set(task_ids_read(via_first)) & set(task_ids_read(via_second))


def pending_job(n: int) -> NewJob:
    return NewJob(family="task", type="imagine", requester_id="alice", platform="fake",
                  channel_id="c1", workspace_id="w1", prompt=f"a fox {n}",
                  status="pending", provider_id=f"task-{n}")  # fmt: skip


async def owners(process: Process, jobs: list[Job]) -> Counter[str | None]:
    return Counter(job.owner for job in await jobs_of(process, jobs))


@asynccontextmanager
async def beating(*processes: Process) -> AsyncIterator[None]:
    """The processes' heartbeats running (every quarter lease) for the block."""
    for process in processes:
        process.engines.tracker.leases.start()
    try:
        yield
    finally:
        for process in processes:
            await process.engines.tracker.leases.stop()


async def test_after_an_outage_nobody_takes_the_jobs_of_a_process_that_renews_in_time(
    postgres: PostgresCluster,
) -> None:
    url, platform = postgres.create_database(), FakePlatform(profile=ROOMY)
    lease = SHARED_LEASE
    async with serve(MANUAL) as sim, process_on(sim, url, platform, lease=lease) as live:
        jobs = [await create_job(live.store.admission, pending_job(n)) for n in range(4)]
        await asyncio.sleep(lease * 1.25)
        async with process_on(sim, url, platform, lease=lease) as back, beating(live, back):
            leases = back.engines.tracker.leases
            assert await leases.beat() == 0, "every lease ran out, but it just got the database"
            await asyncio.sleep(lease * 1.5)
            assert leases.taken_over == 0
            assert await owners(live, jobs) == {live.store.owner.process_id: 4}


async def test_a_takeover_claims_only_a_fair_share(postgres: PostgresCluster) -> None:
    url, platform = postgres.create_database(), FakePlatform(profile=ROOMY)
    lease = SHARED_LEASE
    async with serve(MANUAL) as sim:
        async with process_on(sim, url, platform, dies=True, lease=lease) as dead:
            jobs = [await create_job(dead.store.admission, pending_job(n)) for n in range(10)]
        async with (
            process_on(sim, url, platform, lease=lease) as first,
            process_on(sim, url, platform, lease=lease) as second,
            beating(first, second),
        ):
            live = {first.store.owner.process_id, second.store.owner.process_id}
            counts = await until_owned(first, jobs, live)
            assert sorted(counts.values()) == [5, 5] and set(counts) == live


async def until_owned(process: Process, jobs: list[Job], by: set[str]) -> Counter[str | None]:
    """The owners of ``jobs`` a lease after processes ``by`` hold them all (bounded wait)."""
    lease = process.store.owner.lease_seconds
    async with asyncio.timeout(15 + lease * 4):
        while True:
            counts = await owners(process, jobs)
            if set(counts) <= by:
                await asyncio.sleep(lease)
                return await owners(process, jobs)
            await asyncio.sleep(lease / 4)


async def until_holding(process: Process, jobs: list[Job], count: int) -> None:
    """Wait (bounded) until ``process`` holds ``count`` of ``jobs``."""
    lease = process.store.owner.lease_seconds
    async with asyncio.timeout(15 + lease * 4):
        while True:
            if (await owners(process, jobs))[process.store.owner.process_id] >= count:
                return
            await asyncio.sleep(lease / 4)


async def test_a_process_that_joins_gets_its_share_of_the_load(postgres: PostgresCluster) -> None:
    url, platform = postgres.create_database(), FakePlatform(profile=ROOMY)
    lease = SHARED_LEASE
    async with serve(MANUAL) as sim, process_on(sim, url, platform, lease=lease) as busy:
        jobs = [await create_job(busy.store.admission, pending_job(n)) for n in range(10)]
        async with process_on(sim, url, platform, lease=lease) as joining, beating(busy, joining):
            await until_holding(joining, jobs, 5)
            await asyncio.sleep(lease)
            assert await owners(busy, jobs) == {
                busy.store.owner.process_id: 5,
                joining.store.owner.process_id: 5,
            }


class SlowEdits(FakePlatform):
    """A platform whose edits take longer than a (shared) lease: longer than a heartbeat's
    deadline."""

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        await asyncio.sleep(SHARED_LEASE * 1.5)
        await super().edit(ref, message)


def heartbeat_failures() -> float:
    sample = REGISTRY.get_sample_value("genbot_storage_failures_total", {"kind": "lease heartbeat"})
    return sample or 0.0


async def test_a_slow_platform_neither_holds_up_the_heartbeat_nor_cuts_a_takeover_short(
    postgres: PostgresCluster,
) -> None:
    url, platform, lease = postgres.create_database(), SlowEdits(profile=ROOMY), SHARED_LEASE
    async with serve(MANUAL) as sim:
        async with process_on(sim, url, platform, dies=True, lease=lease) as dead:
            job = await create_job(dead.store.admission, replace(pending_job(1), status="creating"))
            ref = await platform.send(PLACE, OutMessage("⏳ a fox 1"))
            await dead.store.jobs.transition(
                job.id, "creating", "creating", progress_message_id=ref.message_id
            )
        failures = heartbeat_failures()
        async with process_on(sim, url, platform, lease=lease) as survivor, beating(survivor):
            shown = await platform.wait_for(
                lambda: RESTARTED_WHILE_CREATING in platform.messages[ref.message_id].text,
                timeout=15,
                what="the taken-over job's message to say what became of it",
            )
            settled = await survivor.store.jobs.get_job(job.id)
        assert shown and settled is not None and settled.status == "unknown"
        assert settled.owner == survivor.store.owner.process_id
        assert heartbeat_failures() == failures


@dataclass
class SlowHeartbeats(JobLeasing):
    """Leasing whose heartbeat takes ``delay`` seconds of the manual clock ``now`` (a database
    stalled for less than the heartbeat's deadline)."""

    now: list[float] = field(default_factory=list)
    delay: float = 0.0

    async def heartbeat(self, process: ProcessInfo, *, share_of: Iterable[str] = ()) -> Heartbeat:
        self.now[0] += self.delay
        return await super().heartbeat(process, share_of=share_of)


@dataclass
class DeadProcess:
    """A process holding three jobs that never beats, beside a live one whose heartbeats take
    ``store.delay`` of the wall clock ``now``; ``taken``: what the live one took over."""

    store: SlowHeartbeats
    jobs: list[Job]
    taken: list[Job]


@asynccontextmanager
async def a_dead_process(postgres: PostgresCluster, now: list[float]) -> AsyncIterator[DeadProcess]:
    url = postgres.create_database()

    def clock() -> float:
        return now[0]

    async with (
        await PostgresStore.open(url, lease_seconds=LEASE, clock=clock, pool_size=2) as dead,
        await PostgresStore.open(url, lease_seconds=LEASE, clock=clock, pool_size=2) as live,
    ):
        store = SlowHeartbeats(live.db, live.clock, live.leasing.owner, now)
        jobs = [await create_job(dead.admission, pending_job(n)) for n in range(3)]
        yield DeadProcess(store, jobs, [])


def leases_of(process: DeadProcess, now: list[float], moment: list[float]) -> Leases:
    """The live process's leases, on the wall clock ``now`` and the monotonic ``moment``."""

    async def take_over(jobs: list[Job]) -> None:
        process.taken.extend(jobs)

    async def woken(_job_id: str) -> None:
        pass

    return Leases(
        process.store,
        lambda: ["fake"],
        take_over,
        woken,
        clock=lambda: now[0],
        monotonic=lambda: moment[0],
    )


async def test_a_heartbeat_slower_than_a_beat_counts_as_a_stall(postgres: PostgresCluster) -> None:
    now = [1_700_000_000.0]
    async with a_dead_process(postgres, now) as process:
        store, leases = process.store, leases_of(process, now, now)
        assert await leases.beat() == 0
        now[0] += LEASE / 2
        assert await leases.beat() == 0

        store.delay = LEASE * 0.9
        assert await leases.beat() == 0, "the dead process's leases ran out during the stall"
        store.delay = 0.0
        now[0] += LEASE * 0.9
        assert await leases.beat() == 0, "reachable again for less than a lease"
        now[0] += LEASE * 0.2
        assert await leases.beat() == 3
        assert sorted(job.id for job in process.taken) == sorted(job.id for job in process.jobs)


async def test_a_wall_clock_stepped_forward_during_a_heartbeat_is_no_stall(
    postgres: PostgresCluster,
) -> None:
    """A heartbeat's duration was measured on the wall clock: stepped forward during it (an NTP
    step), a quick heartbeat counted as a stall and delayed taking over a dead process's jobs
    by a lease."""
    now, moment = [1_700_000_000.0], [100.0]
    async with a_dead_process(postgres, now) as process:
        store, leases = process.store, leases_of(process, now, moment)
        assert await leases.beat() == 0
        for _ in range(2):
            now[0] += LEASE * 0.6
            moment[0] += LEASE * 0.6
            store.delay = LEASE * 0.9
            taking = await leases.beat()
        assert taking == 3
        assert sorted(job.id for job in process.taken) == sorted(job.id for job in process.jobs)


async def test_a_beat_writes_one_row_however_many_jobs_its_process_holds(
    postgres: PostgresCluster,
) -> None:
    """A beat renewed the lease of every job its process held: at 3,000 jobs it rewrote about
    1,440 rows each quarter lease and held their row locks, which deliveries waited for."""
    url, now, made = postgres.create_database(), [1_700_000_000.0], iter(range(1000))

    def clock() -> float:
        return now[0]

    async def take_over(_jobs: list[Job]) -> None:
        pass

    async def woken(_job_id: str) -> None:
        pass

    async with (
        await PostgresStore.open(url, lease_seconds=LEASE, clock=clock, pool_size=2) as mine,
        await PostgresStore.open(url, lease_seconds=LEASE, clock=clock, pool_size=2) as theirs,
    ):
        counting = counted(mine)
        beats = [
            Leases(store.leasing, lambda: ["fake"], take_over, woken, clock=clock, monotonic=clock)
            for store in (theirs, mine)
        ]
        written: dict[int, int] = {}
        for holding in (3, 30):
            for store, count in ((mine, holding), (theirs, holding + 2)):
                while (
                    len(await store.tracking.list_unfinished_jobs(owner=store.owner.process_id))
                    < count
                ):
                    await create_job(store.admission, pending_job(next(made)))
            for _ in range(BEATS_PER_LEASE + 2):
                now[0] += LEASE / BEATS_PER_LEASE
                before = len(counting.trips)
                assert [await leases.beat() for leases in beats] == [0, 0]
            trips = counting.trips[before:]
            assert any(trip.reads_whole_jobs() for trip in trips), "it looked for jobs to take"
            assert beats[1].held == holding
            written[holding] = sum(trip.rows_written for trip in trips)
        assert written == {3: 1, 30: 1}


async def test_a_beat_is_one_transaction_and_still_takes_a_dead_processs_jobs_at_once(
    postgres: PostgresCluster,
) -> None:
    """The fair share was asked in a transaction of its own after the heartbeat's: an idle
    process sent two transactions a beat (0.8 a second at the default lease)."""
    url, now = postgres.create_database(), [1_700_000_000.0]

    def clock() -> float:
        return now[0]

    taken: list[Job] = []

    async def take_over(jobs: list[Job]) -> None:
        taken.extend(jobs)

    async def woken(_job_id: str) -> None:
        pass

    async with (
        await PostgresStore.open(url, lease_seconds=LEASE, clock=clock, pool_size=2) as dead,
        await PostgresStore.open(url, lease_seconds=LEASE, clock=clock, pool_size=2) as mine,
    ):
        counting = counted(mine)
        leases = Leases(
            mine.leasing, lambda: ["fake"], take_over, woken, clock=clock, monotonic=clock
        )
        beats = []
        for _ in range(BEATS_PER_LEASE + 2):
            now[0] += LEASE / BEATS_PER_LEASE
            before = len(counting.trips)
            assert await leases.beat() == 0
            beats.append(counting.trips[before:])
        assert [len(trips) for trips in beats] == [1] * len(beats)
        load = SQL_LOAD.partition(" (SELECT")[0]
        assert any(sql.startswith(load) for sql, _ in beats[-1][0].statements), "it asked"

        jobs = [await create_job(dead.admission, pending_job(n)) for n in range(3)]
        now[0] += LEASE + LEASE / BEATS_PER_LEASE
        before = len(counting.trips)
        assert await leases.beat() == 3, "the dead process's jobs, at the first beat they are free"
        assert len(counting.trips[before:]) == 2, "the heartbeat, then the claim"
        assert sorted(job.id for job in taken) == sorted(job.id for job in jobs)
