"""Live progress: status words, a ticking elapsed time, the time left, the job's place among
its requester's jobs, and the same message becoming the result (the progress line is
:func:`bot.features.jobs.wording.status_text`; the time left comes from the estimates)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.features.jobs.estimates import Estimates, Usual
from bot.features.jobs.wording import Position, left_text, status_text, status_word
from bot.kernel import Command, User
from simulator.server import serve
from simulator.state import SimulatorConfig
from storage import Job, SqliteStore
from tests.bot.features.jobs.proxy import faulty_proxy
from tests.bot.features.jobs.support import bare_engines, job_record
from tests.bot.harness import PLACE, ROOMY
from tests.fakes.platform import FakePlatform

MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)
WAIT = 10.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def command(user: str) -> Command:
    return Command(user=User(user), place=PLACE, name="imagine")


def second_line(text: str) -> str:
    return text.split("\n")[1]


async def test_progress_moves_and_the_same_message_becomes_the_grid(tmp_path: Path) -> None:
    clock, platform = Clock(), FakePlatform(profile=ROOMY)
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=clock, platform=platform) as bare,
    ):
        engines = bare.engines
        job = await engines.images.imagine(command("alice"), "a red fox")
        assert job.progress_message_id is not None
        progress = platform.messages[job.progress_message_id]
        assert progress.history[0].text == "⏳ **Imagine** — a red fox\nSending · 0:00"
        assert progress.text == "⏳ **Imagine** — a red fox\nQueued (relax) · 0:00", (
            "the provider's answer is shown at once, with no estimate before one was measured"
        )
        assert [b.label for b in progress.buttons] == ["❌ Cancel"]

        clock.now += 7
        await engines.ticker.tick()
        assert second_line(progress.text) == "Queued (relax) · 0:05"

        sim.advance(30)
        clock.now += 30
        await engines.tracker.poll_round()
        await engines.tracker.wait_idle()
        assert second_line(progress.text) == "Drawing (relax) · 0:35"
        edits = len(progress.history)
        clock.now += 2
        await engines.ticker.tick()
        assert len(progress.history) == edits, [m.text for m in progress.history]

        clock.now += 40
        await engines.ticker.tick()
        assert second_line(progress.text) == "Drawing (relax) · 1:15"

        sim.advance(100)
        await engines.tracker.poll_round()
        await engines.tracker.wait_idle()
        done = await bare.store.jobs.get_job(job.id)

        again = await engines.images.imagine(command("alice"), "a blue fox")
        shown = platform.messages[again.progress_message_id or ""]
        clock.now += 10
        await engines.ticker.tick()
        assert second_line(shown.text) == "Queued (relax) · 0:10 · about 70 s left"
        clock.now += 72
        await engines.ticker.tick()
        assert second_line(shown.text) == "Queued (relax) · 1:20", "past the usual: no estimate"
        clock.now += 10
        await engines.ticker.tick()
        assert second_line(shown.text) == "Queued (relax) · 1:30 · taking longer than usual"
        fast = await engines.images.imagine(command("alice"), "a fox", process_mode="fast")
        clock.now += 10
        await engines.ticker.tick()
        fast_line = second_line(platform.messages[fast.progress_message_id or ""].text)
        assert fast_line.startswith("Queued (fast) · 0:10 · your job"), "fast: not measured yet"

    assert done is not None and done.status == "posted"
    assert done.result_message_id == job.progress_message_id
    assert progress.text == "**Imagined** — a red fox (relax)" and progress.message.images
    assert "❌ Cancel" not in [b.label for b in progress.buttons]


async def test_the_elapsed_time_ticks_while_a_job_is_being_sent(tmp_path: Path) -> None:
    """qa: while the provider has not answered the create call (Sending), the elapsed time
    moves like in the other stages; it stood still at 0:00 (the ticker listed only jobs in
    flight, and a process holding only jobs it was sending skipped its ticks)."""
    clock, platform = Clock(), FakePlatform(profile=ROOMY)
    async with (
        serve(MANUAL) as sim,
        faulty_proxy(sim.base_url) as proxy,
        bare_engines(sim, tmp_path, api_url=proxy.base_url, clock=clock, platform=platform) as bare,
    ):
        engines = bare.engines
        await engines.tracker.leases.beat()
        proxy.faults["/gen/v2/imagine"] = ["hang"]
        starting = asyncio.create_task(engines.images.imagine(command("alice"), "a red fox"))
        await asyncio.wait_for(proxy.hung.wait(), WAIT)
        [job] = await bare.store.tracking.list_unfinished_jobs()
        assert job.status == "creating" and job.progress_message_id is not None
        progress = platform.messages[job.progress_message_id]
        assert second_line(progress.text) == "Sending · 0:00"

        clock.now += 7
        assert await engines.ticker.tick() == 1
        assert second_line(progress.text) == "Sending · 0:05"
        proxy.release.set()
        await asyncio.wait_for(starting, WAIT)
        assert second_line(progress.text) == "Queued (relax) · 0:05"


async def test_progress_names_the_place_among_the_requesters_jobs(tmp_path: Path) -> None:
    clock, platform = Clock(), FakePlatform(profile=ROOMY)
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=clock, platform=platform) as bare,
    ):
        images = bare.engines.images
        first = await images.imagine(command("alice"), "one")
        clock.now += 1
        second = await images.imagine(command("alice"), "two")
        other = await images.imagine(command("bob"), "three")
        clock.now += 10
        await bare.engines.ticker.tick()
        lines = {
            job.id: second_line(platform.messages[job.progress_message_id or ""].text)
            for job in (first, second, other)
        }

    assert lines[first.id].endswith("· your job 1 of 2")
    assert lines[second.id].endswith("· your job 2 of 2")
    assert "your job" not in lines[other.id]


def _job(**fields: object) -> Job:
    return job_record(**{"status": "processing", "created_at": 100.0, **fields})


@pytest.mark.parametrize(
    ("fields", "status", "line"),
    [
        ({}, "staged", "Waiting to be queued (relax) · 0:10 · about 50 s left"),
        ({"type": "upscale", "action": "upscale2"}, "processing", "Upscaling (relax) · 0:10"),
        ({"prompt": "a fox --turbo"}, "retry", "Retrying (turbo) · 0:10"),
        ({"parameters": {"process_mode": "fast"}}, "pending", "Queued (fast) · 0:10"),
        ({"type": "describe", "prompt": ""}, "processing", "Describing (relax) · 0:10"),
        ({"family": "diffusion", "type": "txt2img"}, "processing", "Drawing · 0:10"),
    ],
)
def test_status_words_follow_the_work_and_the_mode(
    fields: dict[str, object], status: str, line: str
) -> None:
    estimates = Estimates()
    estimates.observe(_job(finished_at=160.0))
    job = _job(**fields)
    text = status_text(job, status, 12.0, estimates, Position(1, 1))
    assert text == line, "only relax imagine jobs were measured"


def test_the_time_left_is_said_only_before_the_usual_and_longer_only_past_the_longest() -> None:
    usual = Usual(25.0, 40.0)
    assert left_text(None, 0.0) == ""
    assert left_text(usual, 10.0) == "about 15 s left"
    assert left_text(Usual(600.0, 700.0), 10.0) == "about 10 min left"
    assert left_text(usual, 30.0) == left_text(usual, 45.0) == ""
    assert left_text(usual, 46.0) == "taking longer than usual"


async def test_a_process_that_lost_a_job_no_longer_shows_its_progress(tmp_path: Path) -> None:
    clock, platform = Clock(), FakePlatform(profile=ROOMY)
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=clock, platform=platform) as bare,
    ):
        job = await bare.engines.images.imagine(command("alice"), "a red fox")
        read_by_the_ticker = await bare.store.jobs.get_job(job.id)
        assert read_by_the_ticker is not None and job.progress_message_id is not None
        progress = platform.messages[job.progress_message_id]
        clock.now += 7
        assert await bare.engines.delivery.show_progress(read_by_the_ticker)
        assert second_line(progress.text) == "Queued (relax) · 0:05"

        async with await SqliteStore.open(tmp_path / "genbot.db", clock=clock) as other:
            [taken] = await other.leasing.claim_jobs([job.platform], limit=1, take_live=True)
        assert taken.id == job.id
        clock.now += 5
        assert not await bare.engines.delivery.show_progress(read_by_the_ticker)
        assert second_line(progress.text) == "Queued (relax) · 0:05", "its new owner shows it"


@pytest.mark.parametrize(
    ("fields", "word"),
    [
        ({"type": "seed", "action": "seed"}, "Looking up the seed"),
        ({"type": "seed", "action": "seed#2"}, "Looking up the seed"),
        ({"type": "upscale", "action": "upscale1"}, "Upscaling"),
        ({"type": "variation", "action": "variation2"}, "Drawing"),
        ({"type": "describe"}, "Describing"),
    ],
)
def test_a_running_job_says_what_it_does(fields: dict[str, object], word: str) -> None:
    assert status_word(job_record(**fields), "processing") == word
