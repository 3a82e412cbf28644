"""Crash (issue 8, item 5): ``genbot run`` with the web playground, ``kill -9`` at seeded random
moments with jobs in flight, restarted on the same database, then left to finish: every job the
provider accepted has its result posted exactly once, buttons on results posted before a crash
still work after it, and an answer streaming at a kill is settled by the next process (marked
interrupted, its cursor and ⏹ Stop gone, the text stored as the text shown). The scenario and
how posts are counted: :mod:`tests.resilience.crash`.
"""

from __future__ import annotations

import asyncio
import socket
import sqlite3
from pathlib import Path

import pytest

from bot.features.chat.renderer import MARKER
from bot.kernel import Sealer
from simulator.server import serve
from storage import IN_FLIGHT_STATUSES, UNFINISHED_STATUSES
from tests.resilience.crash import Crashes, crash_scenario
from tests.resilience.process import Message, Playground, custom_id, job_of, read_database
from tests.resilience.support import API_KEY, leaked_secrets, sim_config
from tests.sim_holds import one_at_a_time

KILL_SEED = 8
JOBS = 24
KILLS = 3
TIME_SCALE = 0.03
"""A relax grid takes 70 simulated seconds: about two real seconds here."""
SLOW_STREAM = 5.0
"""The simulator's time scale for a streamed answer: a word every 0.1 s."""


@pytest.mark.slow
@pytest.mark.timeout(300)  # unconfirmed jobs get 30 s after the restarts, slow under load
async def test_every_result_is_posted_exactly_once_across_kill_9_restarts(
    tmp_path: Path,
) -> None:
    report = await crash_scenario(
        tmp_path, jobs=JOBS, kills=KILLS, seed=KILL_SEED, time_scale=TIME_SCALE
    )

    assert report.submitted == JOBS
    assert report.check() == []
    assert len(report.posted) >= JOBS // 2, [job["status"] for job in report.jobs]
    at_kills = report.statuses_at_kills()
    assert len(at_kills) == KILLS
    assert any(set(at) & IN_FLIGHT_STATUSES for at in at_kills), at_kills
    assert any("posted" in at and set(at) & UNFINISHED_STATUSES for at in at_kills), at_kills
    assert any("web playground at" in line for line in report.output), "no output captured"
    sealer = Sealer([API_KEY])
    stored = [str(job["webhook_secret"]) for job in report.jobs if job["webhook_secret"]]
    secrets = [API_KEY, *(sealer.open(secret).secret for secret in stored)]
    assert leaked_secrets(report.output, secrets) == []


async def test_buttons_from_before_a_crash_still_work(tmp_path: Path) -> None:
    async with serve(sim_config(time_scale=TIME_SCALE)) as sim:
        crashes = Crashes(sim, tmp_path)
        async with crashes.run() as (_, browser):
            await browser.command("/imagine a lighthouse before the crash")
            [grid] = (await browser.until(lambda: browser.results(), 20.0, "the grid")).values()
        grid_job = job_of(grid)

        async with crashes.run() as (_, browser):
            status, answer = await browser.press(grid["id"], custom_id(grid, "U1"))
            assert status == 202, f"U1 on a grid from before the crash: {status} {answer}"
            upscale = await browser.until(
                lambda: next(
                    (m for m in browser.results().values() if job_of(m) != grid_job), None
                ),
                20.0,
                "the upscale",
            )

        [row] = read_database(
            crashes.db_path, "SELECT * FROM jobs WHERE id = ?", (job_of(upscale),)
        )
        [origin] = read_database(crashes.db_path, "SELECT * FROM jobs WHERE id = ?", (grid_job,))
        assert row["parent_job_id"] == grid_job and row["action"] == "upscale1"
        [sent] = [request.body for request in sim.state.requests_to("/gen/v2/upscale")]
        assert sent["origin_task_id"] == origin["provider_id"] and sent["index"] == "1"


def button_style(message: Message, label: str) -> str:
    return next(str(b["style"]) for row in message["buttons"] for b in row if b["label"] == label)


async def test_a_press_cut_off_by_a_kill_9_shows_used_on_its_grid_after_the_restart(
    tmp_path: Path,
) -> None:
    """qa D12: U1 pressed, the process killed while the upscale was being sent, before the
    press was marked on the grid: the next process marks it as the first would have, so U1 is
    drawn used (blue) as without the crash, and the upscale runs once."""
    async with serve(sim_config(time_scale=TIME_SCALE)) as sim:
        crashes = Crashes(sim, tmp_path)
        async with one_at_a_time(sim, "/gen/v2/upscale") as upscales:
            async with crashes.run() as (_, browser):
                await browser.command("/imagine a lighthouse before the crash")
                [grid] = (await browser.until(lambda: browser.results(), 20.0, "the grid")).values()
                status, answer = await browser.press(grid["id"], custom_id(grid, "U1"))
                assert status == 202, answer
                await upscales.arrived(1)
            assert button_style(crashes.shown[-1][grid["id"]], "U1") == "secondary"

            async with crashes.run() as (_, browser):
                upscales.open()
                marked = await browser.until(
                    lambda: button_style(browser.messages[grid["id"]], "U1") == "primary",
                    20.0,
                    "U1 drawn used",
                )
                assert marked
                upscale = await browser.until(
                    lambda: next(
                        (m for m in browser.results().values() if m["id"] != grid["id"]), None
                    ),
                    20.0,
                    "the upscale",
                )
        assert upscale["text"].startswith("**Upscaled #1**")
        assert len(sim.state.requests_to("/gen/v2/upscale")) == 1


async def test_a_restart_that_finds_the_webhook_port_taken_fails_with_what_it_wrote(
    tmp_path: Path,
) -> None:
    """The simulator retries the first run's webhooks to its port: a restart may not move."""
    async with serve(sim_config(time_scale=TIME_SCALE)) as sim:
        crashes = Crashes(sim, tmp_path)
        async with crashes.run() as (first, _):
            port = first.webhook_port
        with socket.socket() as squatter:
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            squatter.bind(("127.0.0.1", port))
            squatter.listen()
            with pytest.raises(AssertionError, match=f"run2 found webhook port {port} "):
                async with crashes.run():
                    pass


def streaming_answer(browser: Playground) -> Message | None:
    """The model's answer while it streams (its cursor shown) past its twentieth word."""
    for message in browser.messages.values():
        text = str(message["text"])
        if message["kind"] == "bot" and text.endswith(MARKER) and "fox20 " in text:
            return message
    return None


NOTE = "_(interrupted: genbot stopped while writing this answer)_"


def settled_answer(browser: Playground, message_id: str) -> Message | None:
    """The answer once it shows it was interrupted."""
    message = browser.messages.get(message_id)
    return message if message is not None and NOTE in message["text"] else None


def stored_while_streaming(db_path: Path) -> bool:
    """Whether the answer's turn is stored ``streaming`` with more than its first words (checked
    at each change the browser sees: the answer goes on streaming)."""
    turn = stored_answer(db_path)
    return turn is not None and turn["state"] == "streaming" and "fox20 " in str(turn["content"])


def stored_answer(db_path: Path) -> sqlite3.Row | None:
    rows = read_database(db_path, "SELECT * FROM messages WHERE role = 'assistant'")
    return rows[-1] if rows else None


async def stored_interrupted(db_path: Path) -> sqlite3.Row:
    """The answer's turn once the process that settled it stored it (polled: it is written by
    another process, right after its message is edited)."""
    async with asyncio.timeout(20.0):
        while True:
            turn = stored_answer(db_path)
            if turn is not None and turn["state"] == "interrupted":
                return turn
            await asyncio.sleep(0.05)


async def test_an_answer_streaming_at_a_kill_9_is_settled_by_the_next_process(
    tmp_path: Path,
) -> None:
    words = " ".join(f"fox{number}" for number in range(200))
    async with serve(sim_config(time_scale=SLOW_STREAM)) as sim:
        crashes = Crashes(sim, tmp_path)
        async with crashes.run() as (_, browser):
            await browser.command(f"/chat echo: {words}")
            live = await browser.until(lambda: streaming_answer(browser), 20.0, "the answer")
            await browser.until(
                lambda: stored_while_streaming(crashes.db_path), 20.0, "the text shown stored"
            )
        shown_at_kill = str(crashes.shown[-1][live["id"]]["text"]).removesuffix(MARKER)
        assert "fox199" not in shown_at_kill

        async with crashes.run() as (_, browser):
            settled = await browser.until(
                lambda: settled_answer(browser, live["id"]), 20.0, "the answer settled"
            )
            turn = await stored_interrupted(crashes.db_path)
        assert settled["text"].endswith(f"\n\n{NOTE}") and MARKER not in settled["text"]
        assert shown_at_kill.startswith(settled["text"].removesuffix(NOTE).rstrip())
        labels = [button["label"] for row in settled["buttons"] for button in row]
        assert labels == ["🔁", "👍", "👎"]
        assert (turn["state"], turn["content"]) == ("interrupted", settled["text"])
