"""The progress ticker: its edits check their jobs' leases together and give way to deliveries
waiting for a slot, and with several processes on one database (PostgreSQL) each process edits
only the progress messages of the jobs it holds, while a job's place among its requester's jobs
counts the jobs of every process; a process holding no job lists none."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest

from bot.api import ProviderClient
from bot.features.jobs.tracking import tracker as tracker_module
from bot.features.jobs.tracking.ticker import CONCURRENCY, workers
from bot.kernel import (
    Command,
    MessageRef,
    OutMessage,
    Place,
    PlatformProfile,
    SurfaceRegistry,
    User,
)
from bot.outbox import Outbox
from bot.outbox.pacing import Pacer
from genbot.compose import JobEngines, build_job_engines
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from storage import IN_FLIGHT_STATUSES, NewJob, RunningJob
from storage.postgres import PostgresStore
from storage.queries.jobs import SQL_JOB_BY_ID, SQL_LEASES_AND_STATUSES
from storage.queries.tracking import RUNNING_COLUMNS
from tests.bot.features.jobs.support import bare_engines, eventually
from tests.bot.harness import PLACE, ROOMY, harness_settings
from tests.fakes.platform import FakePlatform
from tests.postgres import PostgresCluster
from tests.storage.counting import CountingDatabase, counted
from tests.storage.helpers import create_job

MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)
TICKED = 8
"""As many as the ticker edits at once."""
LEASES = SQL_LEASES_AND_STATUSES.partition(" IN")[0]


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def process_on(
    sim: RunningSimulator,
    url: str,
    platform: FakePlatform,
    clock: Callable[[], float],
    stores: list[PostgresStore] | None = None,
    *,
    shared: bool = False,
) -> AsyncIterator[JobEngines]:
    """One genbot process's job machinery on the database at ``url`` (tracker not started;
    its store added to ``stores``, when given; its writes counted in the write windows the
    processes share, with ``shared``)."""
    settings = harness_settings(sim.base_url, Path("unused.db"), webhooks=False)
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(
            await PostgresStore.open(url, clock=clock, pool_size=2)
        )
        if stores is not None:
            stores.append(store)
        provider = await stack.enter_async_context(ProviderClient(settings.api))
        engines = build_job_engines(
            settings,
            store,
            provider,
            Outbox(
                SurfaceRegistry([platform]),
                Pacer(shared=store.write_windows) if shared else None,
            ),
            clock=clock,
            monotonic=clock,
        )
        stack.push_async_callback(engines.media.aclose)
        stack.push_async_callback(engines.tracker.stop)
        yield engines


def alice_imagines() -> Command:
    return Command(user=User("alice"), place=PLACE, name="imagine")


async def test_each_process_ticks_only_the_jobs_it_holds(postgres: PostgresCluster) -> None:
    url, clock, platform = postgres.create_database(), Clock(), FakePlatform(profile=ROOMY)
    async with (
        serve(MANUAL) as sim,
        process_on(sim, url, platform, clock) as first,
        process_on(sim, url, platform, clock) as second,
    ):
        one = await first.images.imagine(alice_imagines(), "one")
        clock.now += 1
        two = await second.images.imagine(alice_imagines(), "two")
        messages = [platform.messages[job.progress_message_id or ""] for job in (one, two)]
        edits_before = [len(message.history) for message in messages]

        clock.now += 7
        assert await first.ticker.tick() == 1
        assert await second.ticker.tick() == 1

        assert [len(m.history) - n for m, n in zip(messages, edits_before, strict=True)] == [1, 1]
        assert messages[0].text.endswith("· your job 1 of 2")
        assert messages[1].text.endswith("· your job 2 of 2")


class SlowEdits(FakePlatform):
    """Edits that take a moment, counting how many are under way at once."""

    def __init__(self) -> None:
        super().__init__(profile=ROOMY)
        self.under_way = 0
        self.most = 0

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        self.under_way += 1
        self.most = max(self.most, self.under_way)
        try:
            await asyncio.sleep(0.05)
            await super().edit(ref, message)
        finally:
            self.under_way -= 1


async def test_processes_share_the_edits_under_way(postgres: PostgresCluster) -> None:
    url, clock, platform = postgres.create_database(), Clock(), SlowEdits()
    async with (
        serve(MANUAL) as sim,
        process_on(sim, url, platform, clock) as first,
        process_on(sim, url, platform, clock) as second,
    ):
        for n in range(2 * TICKED):
            command = Command(user=User(f"user{n}"), place=PLACE, name="imagine")
            await (first if n % 2 else second).images.imagine(command, f"a fox, study {n}")
        clock.now += 7
        platform.most = 0

        assert await first.ticker.tick() == TICKED

        assert platform.most == TICKED // 2, "half the jobs: half the edits under way at once"


def test_the_processes_together_run_at_most_the_tickers_workers() -> None:
    def jobs(owners: dict[str, int]) -> list[RunningJob]:
        return [
            RunningJob(f"{owner}{n}", "fake", "alice", owner, f"m{owner}{n}")
            for owner, count in owners.items()
            for n in range(count)
        ]

    assert workers(jobs({"a": 8}), "a") == CONCURRENCY
    assert [workers(jobs({"a": 8, "b": 8, "c": 8}), o) for o in "abc"] == [2, 2, 2]
    assert [workers(jobs({"a": 1, "b": 30}), o) for o in "ab"] == [1, 7]
    assert workers(jobs({"b": 8}), "a") == 0


async def test_a_process_reads_whole_only_the_jobs_it_ticks(postgres: PostgresCluster) -> None:
    url, clock, platform = postgres.create_database(), Clock(), FakePlatform(profile=ROOMY)
    stores: list[PostgresStore] = []
    async with (
        serve(MANUAL) as sim,
        process_on(sim, url, platform, clock, stores) as first,
        process_on(sim, url, platform, clock) as second,
    ):
        for n in range(3):
            command = Command(user=User(f"user{n}"), place=PLACE, name="imagine")
            await first.images.imagine(command, f"a fox, study {n}")
        await second.images.imagine(alice_imagines(), "a fox by the other process")
        clock.now += 7
        counting = counted(stores[0])

        assert await first.ticker.tick() == 3

        whole = [trip.rows_read for trip in counting.trips if trip.reads_whole_jobs()]
        assert whole == [3], f"whole rows read per statement: {whole}"


async def test_a_ticks_edits_check_their_jobs_leases_together(tmp_path: Path) -> None:
    clock, platform = Clock(), FakePlatform(profile=ROOMY)
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=clock, platform=platform) as bare,
    ):
        for n in range(TICKED):
            command = Command(user=User(f"user{n}"), place=PLACE, name="imagine")
            await bare.engines.images.imagine(command, f"a fox, study {n}")
        clock.now += 7
        counting = counted(bare.store)

        assert await bare.engines.ticker.tick() == TICKED

        statements = [sql for trip in counting.trips for sql, _ in trip.statements]
        fences = [trip for trip in counting.trips if trip.statements[0][0].startswith(LEASES)]
        assert SQL_JOB_BY_ID not in statements, "no whole job read to check a lease"
        assert 1 <= len(fences) <= 2, f"{len(fences)} lease reads for {TICKED} edits"


async def test_a_tick_leaves_alone_the_jobs_the_provider_finished_since_it_listed_them(
    tmp_path: Path,
) -> None:
    """In a burst every job finishes at once while a tick is editing them: those edits took
    writes from the results that replace the same messages a moment later (and held the job's
    messages, so its result waited for them)."""
    clock, platform = Clock(), FakePlatform(profile=ROOMY)
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=clock, platform=platform) as bare,
    ):
        jobs = [
            await bare.engines.images.imagine(
                Command(user=User(f"user{n}"), place=PLACE, name="imagine"), f"a fox, study {n}"
            )
            for n in range(TICKED)
        ]
        await bare.engines.tracker.wait_idle()
        listed = [await bare.store.jobs.get_job(job.id) for job in jobs]
        for job in jobs[: TICKED // 2]:
            assert await bare.store.jobs.transition(job.id, job.status, "finished")
        clock.now += 7
        messages = [platform.messages[job.progress_message_id or ""] for job in jobs]
        edits_before = sum(len(message.history) for message in messages)

        shown = [await bare.engines.delivery.show_progress(job) for job in listed if job]

        assert shown == [False] * (TICKED // 2) + [True] * (TICKED // 2)
        assert sum(len(message.history) for message in messages) - edits_before == TICKED // 2


async def test_a_job_submitted_after_the_heartbeat_asked_is_ticked_though_the_clock_stepped_back(
    tmp_path: Path,
) -> None:
    """The gate compared the time a job was submitted with the time the last heartbeat asked:
    a wall clock stepped back between the two (``time.time`` is not monotonic: an NTP step)
    closed it on a job that heartbeat had not counted, whose progress stood still until the
    next heartbeat."""
    clock, platform = Clock(), FakePlatform(profile=ROOMY)
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=clock, platform=platform) as bare,
    ):
        assert await bare.engines.tracker.leases.beat() == 0
        clock.now -= 1
        await bare.engines.images.imagine(alice_imagines(), "a fox after the step")
        clock.now += 7

        assert await bare.engines.ticker.tick() == 1


class HeldResults(FakePlatform):
    """Holds every write carrying images (a result) until :attr:`release` is set."""

    def __init__(self) -> None:
        super().__init__(profile=ROOMY)
        self.release = asyncio.Event()
        self.held = 0

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        if message.images:
            self.held += 1
            await self.release.wait()
        await super().edit(ref, message)


async def test_a_tick_edits_nothing_while_deliveries_wait_for_a_slot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tick landing on a burst of results took the event loop and storage from them: at 1000
    jobs, 500 progress edits beside 500 waiting results (bench tracking: finished → posted p95
    1.9 s against 1.4–1.5 s without the tick)."""
    monkeypatch.setattr(tracker_module, "DELIVERY_CONCURRENCY", 1)
    clock, platform = Clock(), HeldResults()
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=clock, platform=platform) as bare,
    ):
        tracker = bare.engines.tracker
        for n in range(2):
            await bare.engines.images.imagine(alice_imagines(), f"a finished fox {n}")
        sim.advance(120)
        await tracker.poll_round()
        await eventually(lambda: platform.held == 1, timeout=10)
        for n in range(TICKED):
            command = Command(user=User(f"user{n}"), place=PLACE, name="imagine")
            await bare.engines.images.imagine(command, f"a fox, study {n}")
        clock.now += 7
        assert tracker.deliveries_waiting, "one result holds the only slot, one waits for it"

        assert await bare.engines.ticker.tick() == 0

        platform.release.set()
        await tracker.wait_idle()
        assert not tracker.deliveries_waiting
        assert await bare.engines.ticker.tick() == TICKED


def listings(counting: CountingDatabase) -> int:
    """How many times the ticker listed the running jobs."""
    listing = f"SELECT {RUNNING_COLUMNS} "
    return sum(sql.startswith(listing) for trip in counting.trips for sql, _ in trip.statements)


async def test_a_process_holding_no_job_lists_none_until_it_holds_one_again(
    postgres: PostgresCluster,
) -> None:
    """An idle process listed every process's running jobs each tick (0.2 statements a second
    at the default tick), though it edits only the messages of its own."""
    url, clock, platform = postgres.create_database(), Clock(), FakePlatform(profile=ROOMY)
    stores: list[PostgresStore] = []
    async with (
        serve(MANUAL) as sim,
        process_on(sim, url, platform, clock, stores) as mine,
        await PostgresStore.open(url, clock=clock, pool_size=2) as dead,
    ):
        leases, counting = mine.tracker.leases, counted(stores[0])
        assert await leases.beat() == 0
        before = len(counting.trips)
        assert [await mine.ticker.tick() for _ in range(3)] == [0, 0, 0]
        assert len(counting.trips) == before, "no statement while it holds no job"

        own = await mine.images.imagine(alice_imagines(), "a fox of its own")
        await mine.tracker.wait_idle()
        clock.now += 7
        assert await mine.ticker.tick() == 1, "a job submitted since the heartbeat"
        assert listings(counting) == 1
        jobs = stores[0].jobs
        assert await jobs.transition(own.id, IN_FLIGHT_STATUSES, "failed")
        assert await jobs.transition(own.id, "failed", "reporting")
        assert await jobs.transition(own.id, "reporting", "failed_posted")
        assert await leases.beat() == 0 and leases.held == 0
        assert await mine.ticker.tick() == 0
        assert listings(counting) == 1

        ref = await platform.send(PLACE, OutMessage("⏳ a fox left behind"))
        left = NewJob(family="task", type="imagine", requester_id="bob", platform="fake",
                      channel_id="c1", workspace_id="w1", prompt="a fox left behind",
                      status="pending", provider_id="task-left")  # fmt: skip
        job = await create_job(dead.admission, left)
        await dead.jobs.transition(job.id, "pending", "pending", progress_message_id=ref.message_id)
        assert await mine.ticker.tick() == 0, "the dead process's job is not this one's yet"
        clock.now += dead.owner.lease_seconds + 1
        assert await leases.beat() == 1
        assert await mine.ticker.tick() == 1, "the job taken over at the heartbeat"
        assert listings(counting) == 2


PLAYGROUND_LIKE = PlatformProfile(
    edits_per_window_per_channel=20, edit_window_seconds=1.0, enforces_windows=False
)


class Running:
    """Time that runs (the shared write windows count real seconds), stepped forward by hand."""

    def __init__(self) -> None:
        self.step = 0.0

    def __call__(self) -> float:
        return time.time() + self.step


def window_transactions(counting: CountingDatabase) -> int:
    """How many transactions went to the shared write windows (reservations and give-backs)."""
    return sum(any("write_slots" in sql for sql, _ in t.statements) for t in counting.trips)


@pytest.mark.heavy
async def test_three_processes_ask_the_shared_windows_about_once_a_progress_edit(
    postgres: PostgresCluster,
) -> None:
    """Three processes' progress edits in the same channels (each process its share of the
    workers) take at most 1.15 of the shared windows' transactions (reservations and
    give-backs) an edit: 0.87–1.01 measured, idle and loaded. A measurement on real time
    (the shared windows count real seconds), so heavy: a loaded machine moves it. Turned away
    for its spacing after another process's write, a progress edit asked again at the moment
    it was told, as did the other processes' (2.3 asks an edit, 1.2–1.3 transactions an edit
    against 0.3–0.5 in one process); that it is booked instead is
    tests/bot/outbox/test_pacing.py's, deterministically."""
    url, clock, platform = (
        postgres.create_database(),
        Running(),
        FakePlatform(profile=PLAYGROUND_LIKE),
    )
    stores: list[PostgresStore] = []
    async with AsyncExitStack() as stack:
        sim = await stack.enter_async_context(serve(MANUAL))
        processes = [
            await stack.enter_async_context(
                process_on(sim, url, platform, clock, stores, shared=True)
            )
            for _ in range(3)
        ]
        for n in range(3 * 40):
            place = Place("fake", "w1", f"c{n % 4}")
            command = Command(user=User(f"user{n}"), place=place, name="imagine")
            await processes[n % 3].images.imagine(command, f"a fox, study {n}")
        for process in processes:
            await process.tracker.wait_idle()
        clock.step += 7
        countings = [counted(store) for store in stores]

        shown = sum(await asyncio.gather(*(process.ticker.tick() for process in processes)))

        transactions = sum(window_transactions(counting) for counting in countings)
        assert shown >= 100, f"{shown} of 120 progress messages edited"
        assert transactions <= 1.15 * shown, f"{transactions} transactions for {shown} edits"
