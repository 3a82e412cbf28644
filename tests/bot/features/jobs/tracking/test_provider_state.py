"""Applying what the provider says: multi_fetch answers are applied as they come, the first
alone and then together those that came while one was being applied (their jobs marked, read
whole in one statement and moved in one round trip whatever their number, and delivered while
the round's other calls are under way; a failed call loses only its own tasks; a round failing
for one key ends once every key's poll has, one failing for one job's apply once the other
jobs' applies are over, and a round cancelled once every key's poll is), a task still in flight
as its job says is not read (nor its job's whole row), and progress edits never hold up a
poll."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import math
import sqlite3
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pydantic import SecretStr

from bot.api import MULTI_FETCH_MAX_IDS, ImagineRequest, TaskRecord
from bot.api.settings import KeySettings
from bot.features.audit import AuditTrail
from bot.features.jobs.tracking import provider_state
from bot.features.jobs.tracking import tracker as tracker_module
from bot.features.jobs.tracking.provider_state import (
    APPLY_AT_MOST,
    LOST_AFTER_NULLS,
    LOST_TASK,
    charged_credits,
    task_result_fields,
)
from bot.features.jobs.wording import status_word
from bot.features.moderation import Moderation
from bot.kernel import (
    Command,
    MessageRef,
    ModerationSettings,
    OutMessage,
    PlatformProfile,
    User,
)
from genbot.settings import Settings
from simulator.server import serve
from simulator.state import SimulatorConfig
from simulator.task_model import fetch_record
from storage import ALL_STATUSES, IN_FLIGHT_STATUSES, Job, StorageError
from storage.queries.tracking import SQL_JOBS_BY_IDS
from storage.sql.session import Session
from tests.bot.api.support import KEY
from tests.bot.features.jobs import support
from tests.bot.features.jobs.proxy import faulty_proxy
from tests.bot.features.jobs.support import Bare, bare_engines, eventually
from tests.bot.harness import PLACE, ROOMY, harness, harness_settings
from tests.fakes.platform import FakePlatform
from tests.sim_holds import one_at_a_time
from tests.sim_time import freeze
from tests.storage.counting import CountingDatabase, Trip, counted

MULTI_FETCH = "/gen/v2/multi_fetch"
MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)
JOBS = MULTI_FETCH_MAX_IDS + 10
"""More jobs than one multi_fetch call reads."""
DUE = 12
"""Results due at once: fewer than the deliveries a tracker runs together."""


def reads_jobs_by_ids(trip: Trip) -> bool:
    """Whether ``trip`` reads jobs whole by their ids (the briefs of a poll's answer)."""
    return any(sql.startswith(SQL_JOBS_BY_IDS.partition("(")[0]) for sql, _ in trip.statements)


def in_whole_answers(counts: list[int], asked: list[int]) -> bool:
    """Whether round trips of ``counts`` rows each are about whole answers to calls of
    ``asked`` ids, each answer in one of them (the answers applied together share their
    round trips)."""
    return any(
        [
            sum(size for size, at in zip(asked, trips, strict=True) if at == n)
            for n in range(len(counts))
        ]
        == counts
        for trips in itertools.product(range(len(counts)), repeat=len(asked))
    )


async def in_flight(bare: Bare, count: int, *, mode: str = "") -> list[Job]:
    """``count`` new jobs in flight (run in ``mode``: ``--fast``; else relax), once the
    deliveries their starts scheduled are over: one still to come claims its job when the test
    has moved it to ``finished`` by hand, beside (or instead of) the claims the test counts."""
    before = {job.id for job in await bare.store.tracking.list_unfinished_jobs(ALL_STATUSES)}
    for n in range(count):
        command = Command(user=User(f"user{n}{mode}"), place=PLACE, name="imagine")
        await bare.engines.images.imagine(command, f"a fox, study {n} {mode}".strip())
    await bare.engines.tracker.wait_idle()
    jobs = await bare.store.tracking.list_unfinished_jobs(IN_FLIGHT_STATUSES)
    made = [job for job in jobs if job.id not in before]
    assert len(made) == count
    return made


async def test_each_answer_finishing_its_jobs_moves_them_in_one_storage_round_trip(
    tmp_path: Path,
) -> None:
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path) as bare:
        jobs = await in_flight(bare, JOBS)
        sim.advance(120)
        counting = counted(bare.store)

        assert await bare.engines.tracker.state.poll_tasks(jobs, mark_polled=False)

        calls = sim.state.requests_to(MULTI_FETCH)
        assert len(calls) == math.ceil(JOBS / MULTI_FETCH_MAX_IDS)
        finishing = [
            trip.moves_to("finished") for trip in counting.trips if trip.moves_to("finished")
        ]
        asked = [len(call.body["task_ids"]) for call in calls]
        assert in_whole_answers(finishing, asked), f"{finishing} moves per round trip: {asked}"
        await bare.engines.tracker.wait_idle()
        finished = await bare.store.tracking.list_unfinished_jobs(IN_FLIGHT_STATUSES)
        assert finished == [], "every job moved on"


async def test_a_poll_reads_no_record_of_a_task_still_in_flight_as_its_job_says(
    tmp_path: Path,
) -> None:
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path) as bare:
        freeze(sim)
        await in_flight(bare, JOBS)
        tracker = bare.engines.tracker
        await tracker.poll_round()
        await tracker.wait_idle()
        read, calls = tracker.state.records_read, len(sim.state.requests_to(MULTI_FETCH))
        counting = counted(bare.store)

        await tracker.poll_round()

        assert len(sim.state.requests_to(MULTI_FETCH)) > calls, "the jobs were polled"
        assert tracker.state.records_read == read, "no record read of a task that did not move"
        whole = sum(trip.rows_read for trip in counting.trips if trip.reads_whole_jobs())
        assert whole == 0, f"{whole} job rows read whole for tasks that did not move"
        sim.advance(120)
        counting.trips.clear()
        calls = len(sim.state.requests_to(MULTI_FETCH))
        await tracker.poll_round()
        assert tracker.state.records_read == read + JOBS, "every finished record read"
        reading = [trip.rows_read for trip in counting.trips if reads_jobs_by_ids(trip)]
        asked = [len(call.body["task_ids"]) for call in sim.state.requests_to(MULTI_FETCH)[calls:]]
        assert in_whole_answers(reading, asked), f"{reading} rows per read: {asked}"
        await tracker.wait_idle()
        assert await bare.store.tracking.list_unfinished_jobs(IN_FLIGHT_STATUSES) == []


async def test_a_poll_reads_no_record_of_a_cancelled_jobs_task_still_in_flight(
    tmp_path: Path,
) -> None:
    """A cancelled job's task is followed only to its end: whatever status in flight the
    provider says it is in, a poll reads no record of it and no row of its job."""
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path) as bare:
        freeze(sim)
        jobs = await in_flight(bare, JOBS)
        for job in jobs:
            assert await bare.store.jobs.transition(
                job.id, IN_FLIGHT_STATUSES, "cancelled", result={"cancelled": True}
            )
        tracker = bare.engines.tracker
        read, calls = tracker.state.records_read, len(sim.state.requests_to(MULTI_FETCH))
        counting = counted(bare.store)

        for _ in range(2):
            await tracker.poll_round()
            await tracker.wait_idle()

        asked = sim.state.requests_to(MULTI_FETCH)[calls:]
        assert sum(len(call.body["task_ids"]) for call in asked) == 2 * JOBS, "polled twice"
        assert tracker.state.records_read == read, "no record read of a cancelled job in flight"
        whole = sum(trip.rows_read for trip in counting.trips if reads_jobs_by_ids(trip))
        assert whole == 0, f"{whole} job rows read whole for cancelled jobs in flight"
        sim.advance(120)
        await tracker.poll_round()
        await tracker.wait_idle()
        assert tracker.state.records_read == read + JOBS, "every finished task's record read"
        task_ids = [job.provider_id for job in jobs if job.provider_id]
        assert await statuses(bare, task_ids) == {"failed_posted"}, "ended hidden, charged"


async def statuses(bare: Bare, task_ids: list[str]) -> set[str]:
    """The statuses of the jobs of these tasks."""
    jobs = await bare.store.tracking.list_unfinished_jobs(ALL_STATUSES)
    mine = [job.status for job in jobs if job.provider_id in task_ids]
    assert len(mine) == len(task_ids), "a job per task"
    return set(mine)


async def test_a_poll_delivers_an_answers_jobs_while_its_next_call_is_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Applying a round's answers only once its last call was answered held the first
    results back for the whole round (about 2 s of a 3000-job burst: issue 32)."""
    monkeypatch.setattr("bot.api.tasks.MULTI_FETCH_CONCURRENCY", 1)
    unpaced = FakePlatform(profile=PlatformProfile(edits_per_window_per_channel=10**9))
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, platform=unpaced) as bare:
        await in_flight(bare, JOBS)
        sim.advance(120)
        tracker = bare.engines.tracker
        async with one_at_a_time(sim, MULTI_FETCH) as calls:
            before = calls.logged
            polling = asyncio.create_task(tracker.poll_round())
            await calls.arrived(before + 1)
            calls.let_through()
            await calls.arrived(before + 2)
            first, last = sim.state.requests_to(MULTI_FETCH)[before:]
            jobs = await bare.store.tracking.list_unfinished_jobs(ALL_STATUSES)
            answered = [job.id for job in jobs if job.provider_id in first.body["task_ids"]]
            assert len(answered) == len(first.body["task_ids"]), "a job per task"
            watch = bare.engines.watch
            await asyncio.gather(*(watch.wait(job_id, {"posted"}, 20) for job_id in answered))

            assert last.status is None and not polling.done(), "the last call is still held"
            assert await statuses(bare, last.body["task_ids"]) <= IN_FLIGHT_STATUSES
        await polling
        await tracker.wait_idle()
        assert await statuses(bare, last.body["task_ids"]) == {"posted"}


async def test_a_failing_multi_fetch_call_loses_only_its_own_tasks_for_the_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One failed call of a key dropped every answer of that key in the round."""
    monkeypatch.setattr("bot.api.tasks.MULTI_FETCH_CONCURRENCY", 1)
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path) as bare:
        jobs = await in_flight(bare, JOBS)
        sim.advance(120)
        state = bare.engines.tracker.state
        async with one_at_a_time(sim, MULTI_FETCH) as calls:
            polling = asyncio.create_task(state.poll_tasks(jobs, mark_polled=False))
            await calls.arrived(1)
            calls.let_through()
            await calls.arrived(2)
            for account in sim.state.accounts.values():
                account.revoked = True
            calls.open()
            async with asyncio.timeout(20):
                changed = await polling
        answered, failed = sim.state.requests_to(MULTI_FETCH)

        assert failed.status == 401 and changed
        assert await statuses(bare, answered.body["task_ids"]) <= {"finished", "posting", "posted"}
        assert await statuses(bare, failed.body["task_ids"]) <= IN_FLIGHT_STATUSES
        assert state.records_read == len(answered.body["task_ids"])


def marks(counting: CountingDatabase) -> list[set[str]]:
    """The ids of the jobs of each poll mark sent to storage so far."""
    return [
        {str(job_id) for job_id in values[1:]}
        for trip in counting.trips
        for sql, values in trip.statements
        if sql.startswith("UPDATE jobs SET last_polled_at")
    ]


def marked_polled(counting: CountingDatabase) -> set[str]:
    """The ids of the jobs whose poll marks were sent to storage so far."""
    return set().union(*marks(counting))


@pytest.mark.parametrize("at_most", [APPLY_AT_MOST, 1])
async def test_the_answers_that_came_while_one_was_applied_are_applied_in_one_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at_most: int
) -> None:
    """Each answer was applied on its own (one poll mark, one whole read and one move batch
    per answer): about 20 write transactions a round on SQLite's one writer, queued with the
    deliveries, where there was one. At most ``APPLY_AT_MOST`` go together (a statement's ids
    stay within the databases' limits)."""
    monkeypatch.setattr("bot.api.tasks.MULTI_FETCH_CONCURRENCY", 1)
    monkeypatch.setattr(provider_state, "APPLY_AT_MOST", at_most)
    together = -(-2 // at_most)
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path) as bare:
        await in_flight(bare, 3 * MULTI_FETCH_MAX_IDS + 10)
        sim.advance(120)
        briefs = await bare.store.tracking.list_job_briefs(IN_FLIGHT_STATUSES, family="task")
        job_of = {brief.provider_id: brief.id for brief in briefs}
        counting = counted(bare.store)
        holding, free = asyncio.Event(), asyncio.Event()

        async def other_writer(_: Session) -> None:
            holding.set()
            async with asyncio.timeout(20):
                await free.wait()

        async with one_at_a_time(sim, MULTI_FETCH) as calls:
            polling = asyncio.create_task(
                bare.engines.tracker.state.poll_tasks(briefs, mark_polled=True)
            )
            await calls.arrived(1)
            writing = asyncio.create_task(bare.store.db.transaction(other_writer))
            await holding.wait()
            calls.let_through()
            await eventually(lambda: len(marks(counting)) == 1)  # waiting for the other writer
            await calls.arrived(2)
            calls.let_through()
            await calls.arrived(3)  # once the second call was answered
            calls.let_through()
            await calls.arrived(4)  # once the third call was answered
            free.set()
            await eventually(lambda: len(marks(counting)) == 1 + together)  # the fourth held
            calls.let_through()
            async with asyncio.timeout(20):
                assert await polling
            await writing

        asked = [
            {job_of[task_id] for task_id in call.body["task_ids"]}
            for call in sim.state.requests_to(MULTI_FETCH)
        ]
        meanwhile = [asked[1], asked[2]]
        chunks = [set().union(*meanwhile[n : n + at_most]) for n in range(0, 2, at_most)]
        steps = [asked[0], *chunks, asked[3]]
        assert marks(counting) == steps, "one poll mark per step"
        sizes = [len(step) for step in steps]
        reading = [trip.rows_read for trip in counting.trips if reads_jobs_by_ids(trip)]
        finishing = [trip.moves_to("finished") for trip in counting.trips]
        assert reading == sizes, f"{reading} rows per read: {sizes} per step"
        assert [n for n in finishing if n] == sizes, f"{finishing} moves per trip: {sizes} per step"


RELAX_SECRET = "key-relax-0123"
TWO_ACCOUNTS = SimulatorConfig(
    time_scale=1.0, clock_start=1_700_000_000, accounts=((RELAX_SECRET, 10_000),)
)
FAST_POLLS_UNSTORABLE = """CREATE TRIGGER fast_polls_unstorable
BEFORE UPDATE OF last_polled_at ON jobs WHEN OLD.provider_key = 'fast'
BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END"""
"""A real database fault: the poll marks of the ``fast`` key's jobs cannot be stored."""


def two_keys(*args: Any, **kwargs: Any) -> Settings:
    """:func:`harness_settings` with a pool of two keys, each its own account of
    :data:`TWO_ACCOUNTS`: fast jobs go to ``fast``, the others (relax) to ``relax``."""
    settings = harness_settings(*args, **kwargs)
    keys = [
        KeySettings(name="fast", key=SecretStr(TWO_ACCOUNTS.api_key), modes=["fast"]),
        KeySettings(name="relax", key=SecretStr(RELAX_SECRET), modes=["relax"]),
    ]
    api = settings.api.model_copy(update={"key": SecretStr(""), "keys": keys})
    return settings.model_copy(update={"api": api})


async def test_a_round_failing_for_one_key_ends_only_once_every_keys_poll_is_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round over two keys failed as soon as one key's answer could not be stored, while
    the other key's poll went on writing, detached from the round that had failed."""
    monkeypatch.setattr("bot.api.tasks.MULTI_FETCH_CONCURRENCY", 1)
    monkeypatch.setattr(support, "harness_settings", two_keys)
    async with serve(TWO_ACCOUNTS) as sim, bare_engines(sim, tmp_path) as bare:
        freeze(sim)
        relax = await in_flight(bare, JOBS)
        fast = await in_flight(bare, 2, mode="--fast")
        assert {job.provider_key for job in relax} == {"relax"}
        assert {job.provider_key for job in fast} == {"fast"}
        await bare.store.db.execute(FAST_POLLS_UNSTORABLE)
        counting = counted(bare.store)
        polled_at_end: list[set[str]] = []
        async with one_at_a_time(sim, MULTI_FETCH) as calls:
            polling = asyncio.create_task(
                bare.engines.tracker.state.poll_tasks(fast + relax, mark_polled=True)
            )
            polling.add_done_callback(lambda _: polled_at_end.append(marked_polled(counting)))
            await calls.arrived(2)  # the fast key's one call and the relax key's first
            calls.let_through()
            await calls.arrived(3)  # the relax key's second, held
            calls.open()
            with pytest.raises(StorageError, match="disk I/O error"):
                await polling

        [polled] = polled_at_end
        assert {job.id for job in relax} <= polled, "the round ended before the relax key's poll"
        stored = [await bare.store.jobs.get_job(job.id) for job in fast + relax]
        marks = [job.last_polled_at is not None for job in stored if job is not None]
        assert marks == [False] * len(fast) + [True] * len(relax), "only the fast key failed"


SCREENING_UNREADABLE = "ALTER TABLE moderation_rules RENAME TO moderation_rules_gone"
"""A real database fault: a finished describe job's result cannot be screened (its workspace's
rules cannot be read), while the other jobs' moves can be stored."""


def still_polling() -> list[str]:
    """The keys' polls, their answers' applies and their multi_fetch calls still under way."""
    parts = {"_poll_key", "_apply_read", "_multi_fetch_part"}
    return [
        name
        for task in asyncio.all_tasks()
        if not task.done() and (name := getattr(task.get_coro(), "__name__", "")) in parts
    ]


async def test_a_failing_apply_ends_the_round_only_once_the_other_jobs_applies_are_over(
    tmp_path: Path,
) -> None:
    """An answer's jobs were applied with a plain gather: when one job's apply failed (its
    describe result could not be screened), the round raised at once while the other jobs'
    moves were still on their way to storage, detached from the round that had failed."""
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path) as bare:
        state = bare.engines.tracker.state
        state.results = Moderation(
            ModerationSettings(), bare.store.moderation, audit=AuditTrail(bare.store.audit, 90)
        )
        imagined = await in_flight(bare, 3)
        describing = Command(user=User("describer"), place=PLACE, name="describe")
        await bare.engines.images.describe(describing, "https://images.example.com/fox.png")
        jobs = await bare.store.tracking.list_unfinished_jobs(IN_FLIGHT_STATUSES)
        assert sorted(job.type for job in jobs) == ["describe"] + ["imagine"] * len(imagined)
        sim.advance(120)
        await bare.store.db.execute(SCREENING_UNREADABLE)
        counting = counted(bare.store)

        def stored_moves() -> int:
            return sum(trip.rows_written for trip in counting.trips if trip.moves_to("finished"))

        at_end: list[tuple[int, list[str]]] = []
        with contextlib.closing(sqlite3.connect(tmp_path / "genbot.db")) as other:
            other.isolation_level = None
            other.execute("BEGIN IMMEDIATE")  # another process writing: the moves wait for it
            polling = asyncio.create_task(state.poll_tasks(jobs, mark_polled=False))
            polling.add_done_callback(lambda _: at_end.append((stored_moves(), still_polling())))
            await eventually(lambda: any(trip.moves_to("finished") for trip in counting.trips))
            for _ in range(20):
                await asyncio.sleep(0)
            other.execute("COMMIT")
            with pytest.raises(StorageError, match="moderation_rules"):
                await polling

        assert at_end == [(len(imagined), [])], "the round ended before the others' moves"


async def test_cancelling_a_round_cancels_every_keys_poll_and_waits_for_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round cancelled (the tracker stopping) while both keys' calls are under way ends only
    once neither key's poll nor any of their calls is left running; nothing is applied."""
    monkeypatch.setattr("bot.api.tasks.MULTI_FETCH_CONCURRENCY", 1)
    monkeypatch.setattr(support, "harness_settings", two_keys)
    async with serve(TWO_ACCOUNTS) as sim, bare_engines(sim, tmp_path) as bare:
        freeze(sim)
        relax = await in_flight(bare, JOBS)
        fast = await in_flight(bare, 2, mode="--fast")
        counting = counted(bare.store)
        at_end: list[list[str]] = []
        async with one_at_a_time(sim, MULTI_FETCH) as calls:
            polling = asyncio.create_task(
                bare.engines.tracker.state.poll_tasks(fast + relax, mark_polled=True)
            )
            polling.add_done_callback(lambda _: at_end.append(still_polling()))
            await calls.arrived(2)  # the fast key's one call and the relax key's first
            assert sorted(still_polling()) == ["_multi_fetch_part"] * 3 + ["_poll_key"] * 2
            polling.cancel()
            with pytest.raises(asyncio.CancelledError):
                await polling

        assert at_end == [[]], "a key's poll or call outlived the round"
        assert marked_polled(counting) == set() and calls.logged == 2


async def test_a_round_polls_its_pages_of_jobs_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round that polled each page before listing the next waited for a page's last call
    each time, and made a call more per page when a page is not a multiple of 50."""
    monkeypatch.setattr(tracker_module, "PAGE_SIZE", JOBS // 3)
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path) as bare:
        freeze(sim)
        await in_flight(bare, JOBS)
        calls = len(sim.state.requests_to(MULTI_FETCH))

        await bare.engines.tracker.poll_round()

        polls = sim.state.requests_to(MULTI_FETCH)[calls:]
        assert sum(len(call.body["task_ids"]) for call in polls) == JOBS, "every job polled"
        assert len(polls) == math.ceil(JOBS / MULTI_FETCH_MAX_IDS), f"{len(polls)} calls"


async def test_a_task_seen_in_flight_between_null_answers_starts_their_count_again(
    tmp_path: Path,
) -> None:
    now = [1_700_000_000.0]
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, clock=lambda: now[0]) as bare:
        freeze(sim)
        (job,) = await in_flight(bare, 1)
        state = bare.engines.tracker.state
        await state.poll_tasks([job], mark_polled=False)
        polled = await bare.store.jobs.get_job(job.id)
        assert polled is not None and polled.provider_id
        task = sim.state.tasks[polled.provider_id]

        async def poll(answers: str) -> None:
            if answers == "null":
                sim.state.tasks.pop(task.task_id, None)
            else:
                sim.state.tasks[task.task_id] = task
            await state.poll_tasks([polled], mark_polled=False)
            now[0] += 60

        for answers in ("null", "null", "as known", "null", "null"):
            await poll(answers)

        assert polled.status == (await bare.store.jobs.get_job(job.id) or job).status


async def test_a_lost_task_is_reported_on_time_though_the_wall_clock_stepped_back(
    tmp_path: Path,
) -> None:
    """The span of a task's null answers was measured on the wall clock: stepped back an hour
    after the first (an NTP step), the task was reported lost an hour late."""
    now, moment = [1_700_000_000.0], [100.0]
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=lambda: now[0], monotonic=lambda: moment[0]) as bare,
    ):
        freeze(sim)
        (job,) = await in_flight(bare, 1)
        state = bare.engines.tracker.state
        await state.poll_tasks([job], mark_polled=False)
        polled = await bare.store.jobs.get_job(job.id)
        assert polled is not None and polled.provider_id
        sim.state.tasks.pop(polled.provider_id)
        for step in range(LOST_AFTER_NULLS):
            await state.poll_tasks([polled], mark_polled=False)
            now[0] += -3600 if step == 0 else 60
            moment[0] += 60

        lost = await bare.store.jobs.get_job(job.id)
        assert lost is not None and lost.error == LOST_TASK


class HeldEdits(FakePlatform):
    """Once :attr:`holding`, holds every edit until :attr:`release` is set."""

    def __init__(self) -> None:
        super().__init__(profile=ROOMY)
        self.holding = False
        self.release = asyncio.Event()
        self.held = 0

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        if self.holding:
            self.held += 1
            await self.release.wait()
        await super().edit(ref, message)


async def test_a_poll_round_does_not_wait_for_progress_edits(tmp_path: Path) -> None:
    platform = HeldEdits()
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, platform=platform) as bare:
        (job,) = await in_flight(bare, 1)
        platform.holding = True
        task = sim.state.tasks[job.provider_id or ""]
        sim.advance((task.lifecycle.started_after() or 0) + 1)  # processing, whether staged or not
        tracker = bare.engines.tracker

        async with asyncio.timeout(30):
            await tracker.poll_round()

        moved = await bare.store.jobs.get_job(job.id)
        assert moved is not None and moved.status != job.status
        await eventually(lambda: platform.held == 1)  # its own task: the round did not wait
        assert tracker.state.busy, "and is still under way, held by the platform"
        platform.release.set()
        await tracker.wait_idle()
        assert not tracker.state.busy
        shown = platform.messages[moved.progress_message_id or ""].message.text
        assert f"\n{status_word(moved, moved.status)} " in shown, shown


async def test_the_delivery_pass_reads_only_the_ids_of_jobs_waiting_for_delivery(
    tmp_path: Path,
) -> None:
    unpaced = FakePlatform(profile=PlatformProfile(edits_per_window_per_channel=10**9))
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, platform=unpaced) as bare:
        jobs = await in_flight(bare, 3)
        for job in jobs:
            assert await bare.store.jobs.transition(job.id, IN_FLIGHT_STATUSES, "finished")
        counting = counted(bare.store)

        await bare.engines.tracker.poll_round()

        whole = [trip for trip in counting.trips if trip.reads_whole_jobs()]
        assert sum(trip.rows_read for trip in whole) == 0, "no finished job read whole to find it"
        await bare.engines.tracker.wait_idle()
        assert await bare.store.tracking.list_unfinished_jobs(("finished",)) == []


async def test_results_due_together_are_claimed_in_one_transaction(tmp_path: Path) -> None:
    unpaced = FakePlatform(profile=PlatformProfile(edits_per_window_per_channel=10**9))
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, platform=unpaced) as bare:
        jobs = await in_flight(bare, DUE)
        for job in jobs:
            assert await bare.store.jobs.transition(job.id, IN_FLIGHT_STATUSES, "finished")
        counting = counted(bare.store)

        await bare.engines.tracker.poll_round()
        await bare.engines.tracker.wait_idle()

        claiming = [trip for trip in counting.trips if trip.claims()]
        assert len(claiming) == 1, f"{len(claiming)} transactions claimed {DUE} due results"
        posted = [await bare.store.jobs.get_job(job.id) for job in jobs]
        assert [(job.status, job.post_claims) for job in posted if job] == [("posted", 1)] * DUE


def test_the_charge_is_the_records_credit_else_what_it_froze() -> None:
    def record(result: dict[str, object], meta: dict[str, object]) -> TaskRecord:
        return TaskRecord.model_validate(
            {"task_id": "t", "status": "finished", "task_result": result, "meta": meta}
        )

    assert charged_credits(record({"credit": 8}, {"frozen_credit": 4})) == 8
    assert charged_credits(record({"credit": 0}, {"frozen_credit": 4})) == 0
    assert charged_credits(record({}, {"frozen_credit": 4})) == 4
    assert charged_credits(record({"credit": None}, {"frozen_credit": "6"})) == 6
    assert charged_credits(record({}, {})) == 0


def test_a_finished_records_prompts_are_read_only_where_it_has_some() -> None:
    def record(result: dict[str, object]) -> TaskRecord:
        return TaskRecord.model_validate(
            {"task_id": "t", "status": "finished", "task_result": result}
        )

    described = record({"message": "1️⃣ a fox\n2️⃣ a cat"})
    assert task_result_fields(described)["result"]["prompts"] == ["a fox", "a cat"]
    listed = record({"prompts": ["a dog"], "message": "1️⃣ a fox"})
    assert task_result_fields(listed)["result"]["prompts"] == ["a dog"]
    assert task_result_fields(record({"image_url": "https://x/y.png"}))["result"]["prompts"] == []


async def test_a_record_naming_another_task_is_applied_to_no_job(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A multi_fetch record is applied only to the job whose task it names and that genbot
    # asked about: records swapped between two finished tasks are ignored (logged), and their
    # jobs count as not answered this round (no poll stamp), so the next round reads them.
    async with (
        serve(MANUAL) as sim,
        faulty_proxy(sim.base_url) as proxy,
        bare_engines(sim, tmp_path, api_url=proxy.base_url) as bare,
    ):
        first, second = await in_flight(bare, 2)
        one, two = first.provider_id or "", second.provider_id or ""
        sim.advance(120)
        state = bare.engines.tracker.state
        proxy.faults[MULTI_FETCH] = ["misnamed"]
        proxy.renames = {one: two, two: one}
        with caplog.at_level(logging.WARNING):
            assert not await state.poll_tasks([first, second], mark_polled=True)
        for job in (first, second):
            kept = await bare.store.jobs.get_job(job.id)
            assert kept is not None and kept.status in IN_FLIGHT_STATUSES, kept
            assert kept.provider_id == job.provider_id and kept.result_urls == []
            assert kept.last_polled_at == job.last_polled_at, "not answered: not stamped"
        warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any(one in line and two in line for line in warned), warned
        assert not any(KEY in line for line in warned)

        assert await state.poll_tasks([first, second], mark_polled=True)
        await bare.engines.tracker.wait_idle()
        for job in (first, second):
            done = await bare.store.jobs.get_job(job.id)
            task = sim.state.tasks[job.provider_id or ""]
            assert done is not None and done.result_urls[0] == task.image_url("images")


async def test_a_job_without_a_task_id_adopts_only_the_task_it_asked_about(
    tmp_path: Path,
) -> None:
    # An unconfirmed job reads the task a notification named: an answer whose record names
    # another task of the account is not adopted under that task's id.
    async with (
        serve(MANUAL) as sim,
        faulty_proxy(sim.base_url) as proxy,
        bare_engines(sim, tmp_path, api_url=proxy.base_url) as bare,
    ):
        proxy.faults["/gen/v2/imagine"] = ["lose"]
        alice = Command(user=User("alice"), place=PLACE, name="imagine")
        await bare.engines.images.imagine(alice, "a fox")
        (job,) = await bare.store.tracking.list_unfinished_jobs({"unknown"})
        (claimed,) = sim.state.tasks
        other = await bare.provider.tasks.imagine(ImagineRequest(prompt="a cat"))
        sim.advance(120)
        state = bare.engines.tracker.state
        proxy.faults[MULTI_FETCH] = ["misnamed"]
        proxy.renames = {claimed: other.task_id}

        assert not await state.poll_tasks([job], mark_polled=False, claimed={job.id: claimed})
        still = await bare.store.jobs.get_job(job.id)
        assert still is not None and still.status == "unknown" and still.provider_id is None

        assert await state.poll_tasks([still], mark_polled=False, claimed={job.id: claimed})
        adopted = await bare.store.jobs.get_job(job.id)
        assert adopted is not None and adopted.provider_id == claimed


async def test_a_record_of_another_task_given_for_a_job_changes_nothing(tmp_path: Path) -> None:
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path) as bare:
        (job,) = await in_flight(bare, 1)
        other = TaskRecord.model_validate(
            {"task_id": "another-task", "status": "finished", "task_result": {"credit": 7}}
        )
        assert not await bare.engines.tracker.apply_task_record(job, other)
        kept = await bare.store.jobs.get_job(job.id)
        assert kept is not None and kept.status == job.status and kept.credits is None


async def test_a_late_notification_never_moves_progress_back(tmp_path: Path) -> None:
    # docs/provider.md#task-transitions: a record sent while the task was queued that arrives
    # once a poll saw it running changes neither the job nor its message, by webhook or given
    # for a job read before the poll; the task's end still wins.
    config = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000, insecure_webhooks=True)
    unpaced = FakePlatform(profile=PlatformProfile(edits_per_window_per_channel=10**9))
    async with harness(tmp_path, webhooks=True, sim_config=config, platform=unpaced) as bot:
        await bot.actor().command("imagine", prompt="a fox")
        queued_job = await bot.latest_job()
        task = bot.sim.state.tasks[queued_job.provider_id or ""]
        queued = fetch_record(task, bot.sim.state.now())
        assert queued["status"] in ("staged", "pending")
        while task.status_at(bot.sim.state.now()) != "processing":
            bot.sim.advance(1)
        tracker = bot.jobs.tracker
        await tracker.state.poll_tasks([queued_job], mark_polled=True)
        await tracker.wait_idle()
        running = await bot.store.jobs.get_job(queued_job.id)
        assert running is not None and running.status == "processing"
        drawing = bot.progress(running).text
        assert "Drawing" in drawing, drawing

        url = f"{bot.settings.webhook.public_url}/webhooks/tasks/{queued_job.id}"
        secret = await bot.jobs.starter.webhook_secrets.of(queued_job) or ""
        async with (
            aiohttp.ClientSession() as http,
            http.post(url, data=json.dumps(queued), headers={"x-webhook-secret": secret}) as answer,
        ):
            assert answer.status == 200
        await tracker.wait_idle()
        late = TaskRecord.model_validate(queued)
        assert not await tracker.apply_task_record(queued_job, late, webhook_at=time.time())
        after = await bot.store.jobs.get_job(queued_job.id)
        assert after is not None and after.status == "processing"
        assert after.last_webhook_at is not None
        assert bot.progress(after).text == drawing

        bot.sim.advance(600)
        assert (await bot.result(queued_job.id)).message.images
