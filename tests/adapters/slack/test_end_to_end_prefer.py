"""End to end, saved options and the preview of several jobs on Slack (``/genbot prefer …``,
``/imagine`` as text): a saved option expands in a prompt, an unknown one is refused; ``{red,
blue} fox --repeat 2`` is previewed privately with its cost and Run starts its 4 jobs once,
pressed twice — the real adapter and core against the fake Slack and the simulator."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from storage import ALL_STATUSES
from tests.adapters.slack.end_to_end import JOB_TIME_SCALE, WAIT, created, slack_genbot
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_model import Ephemeral

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")

SREF = "https://example.com/styles/neon.png"


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=JOB_TIME_SCALE)) as running:
        yield running


def buttons_of(message: Ephemeral) -> list[str]:
    """The labels of the buttons ``message`` shows (Slack has no disabled buttons)."""
    return [
        element["text"]["text"]
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block["elements"]
        if element.get("type") == "button"
    ]


async def test_a_cancelled_preview_loses_its_buttons_and_a_stale_press_runs_nothing(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        await fake.post_command(bot.url, fake.slash_command("/imagine", "{red, blue} fox"))
        preview = await fake.wait_for(
            lambda: next((e for e in fake.ephemerals if e.blocks), None), WAIT
        )
        assert buttons_of(preview) == ["Run 2 jobs", "Cancel"]
        shown = preview.text
        stale = fake.ephemeral_block_actions(preview, preview.button("Run 2 jobs")["action_id"])
        cancel = fake.ephemeral_block_actions(preview, preview.button("Cancel")["action_id"])
        await fake.post_interactive(bot.url, cancel)
        await fake.wait_for(lambda: not buttons_of(preview), WAIT)
        assert preview.text == shown, "the preview stays, without its buttons"
        [_, cancelled] = await fake.wait_for(lambda: told(fake, 2), WAIT)
        assert cancelled == "Cancelled: nothing was started."

        await fake.post_interactive(bot.url, stale)
        [*_, again] = await fake.wait_for(lambda: told(fake, 3), WAIT)
        assert again == "You cancelled these jobs: run the command again to start them."
        await asyncio.sleep(0.3)
        assert created(sim, "/gen/v2/imagine") == []
        assert await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES) == []


def told(fake: FakeSlack, count: int) -> list[str] | None:
    texts = [e.text for e in fake.ephemerals]
    return texts if len(texts) >= count else None


async def test_saved_options_expand_and_several_jobs_run_once_from_their_preview(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    limits = {"max_concurrent_jobs_per_user": 4}
    async with slack_genbot(fake, sim, tmp_path / "genbot.db", limits=limits) as bot:
        saving = f"prefer option set neon --style raw --sref {SREF}"
        await fake.post_command(bot.url, fake.slash_command("/genbot", saving))
        [saved] = await fake.wait_for(lambda: told(fake, 1), WAIT)
        assert saved.startswith("Saved: --neon stands for")

        await fake.post_command(bot.url, fake.slash_command("/imagine", "a city --nein"))
        [_, refused] = await fake.wait_for(lambda: told(fake, 2), WAIT)
        assert "--nein is not one of your saved options (yours are --neon" in refused
        assert created(sim, "/gen/v2/imagine") == [], "no provider call"

        await fake.post_command(bot.url, fake.slash_command("/imagine", "a city --neon --ar 2:1"))
        [sent] = await fake.wait_for(lambda: created(sim, "/gen/v2/imagine"), WAIT)
        assert sent.body["prompt"] == f"a city --style raw --sref {SREF}"
        assert sent.body["aspect_ratio"] == "2:1"

        for count, (slash, text) in enumerate(
            (
                ("/genbot", "prefer option set wide --ar 99"),
                ("/genbot", "prefer option set wide --ar 16:9"),
                ("/imagine", "a fox --wide --ar 1:1"),
            ),
            3,
        ):
            await fake.post_command(bot.url, fake.slash_command(slash, text))
            await fake.wait_for(functools.partial(told, fake, count), WAIT)
        [_, _, bad, wide, twice] = told(fake, 5) or []
        assert bad.startswith("--wide: --ar must look like 16:9")
        assert wide.startswith("Saved: --wide stands for `--ar 16:9`")
        assert twice == (
            "--ar was given twice. Your saved option --wide (`--ar 16:9`) was put in; change it "
            "with `/genbot prefer option set`."
        )
        assert len(created(sim, "/gen/v2/imagine")) == 1

        command = fake.slash_command("/imagine", "{red, blue} fox --repeat 2 --fast")
        await fake.post_command(bot.url, command)
        preview = await fake.wait_for(
            lambda: next((e for e in fake.ephemerals if e.blocks), None), WAIT
        )
        assert (
            "4 jobs" in preview.text
            and "estimated" in preview.text
            and "32 credits" in preview.text
        )
        assert "1. red fox" in preview.text and "4. blue fox" in preview.text
        assert len(created(sim, "/gen/v2/imagine")) == 1

        run = preview.button("Run 4 jobs")["action_id"]
        presses = [fake.ephemeral_block_actions(preview, run) for _ in range(2)]
        await asyncio.gather(*(fake.post_interactive(bot.url, press) for press in presses))
        again = await fake.wait_for(
            lambda: [t for t in told(fake, 3) or [] if "started already" in t] or None, WAIT
        )
        assert again
        await fake.wait_for(lambda: not buttons_of(preview), WAIT)
        assert "1. red fox" in preview.text and "4. blue fox" in preview.text
        assert fake.ephemerals.count(preview) == 1, "replaced where it was, not posted again"
        await fake.wait_for(lambda: len(created(sim, "/gen/v2/imagine")) == 5 or None, WAIT)
        prompts = sorted(r.body["prompt"] for r in created(sim, "/gen/v2/imagine")[1:])
        assert prompts == ["blue fox", "blue fox", "red fox", "red fox"]
        assert all(r.body["process_mode"] == "fast" for r in created(sim, "/gen/v2/imagine")[1:])
        await asyncio.sleep(0.3)
        jobs = await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES)
        assert len(jobs) == 5, "Run started the four previewed jobs once"


async def test_what_the_user_types_wins_over_their_suffix(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        suffix = "prefer suffix --v 5.2 --ar 16:9 --stylize 100"
        await fake.post_command(bot.url, fake.slash_command("/genbot", suffix))
        [saved] = await fake.wait_for(lambda: told(fake, 1), WAIT)
        assert saved.startswith("Saved: every")

        await fake.post_command(bot.url, fake.slash_command("/imagine", "\u200b"))
        [_, refused] = await fake.wait_for(lambda: told(fake, 2), WAIT)
        assert "only invisible characters" in refused

        typed = "a tower --v 6 --ar 1:1"
        await fake.post_command(bot.url, fake.slash_command("/imagine", typed))
        [sent] = await fake.wait_for(lambda: created(sim, "/gen/v2/imagine"), WAIT)
        assert sent.body["prompt"] == "a tower --v 6 --stylize 100"
        assert sent.body["aspect_ratio"] == "1:1"
        assert told(fake, 3) is None, "nothing refused"
