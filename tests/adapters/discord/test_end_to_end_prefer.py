"""End to end, saved options, permutations, repeats and the preview on Discord: ``/prefer option
set`` then ``--neon`` in a prompt (offered by the prompt's autocomplete); ``{red, blue} fox
--repeat 2`` previewed privately with its cost and started once by Run (pressed twice), the job
past the cap of jobs at once queued — through the real discord.py, the fake Discord, the real
core and the simulator over HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import (
    QUICK_BUCKET,
    QUICK_WINDOW,
    creations,
    ephemeral_texts,
    real_genbot,
)
from tests.fakes.discord import FakeDiscord, FakeMessage, FakeUser

pytestmark = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)

SREF = "https://example.com/styles/neon.png?v=2"


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=0.003, seed=5)) as running:
        yield running


async def told(fake: FakeDiscord, user: FakeUser, count: int) -> list[str]:
    """The first ``count`` things ``user`` was told privately, once there are that many."""
    texts = await fake.wait_for(
        lambda: (t := ephemeral_texts(fake, user))[count - 1 :] and t, what=f"{count} answers"
    )
    return texts[:count]


async def test_a_saved_option_expands_and_an_unknown_one_is_refused(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    async with real_genbot(harness, sim, tmp_path / "genbot.db", edit_window_seconds=QUICK_WINDOW):
        saved = {"action": "set", "name": "neon", "value": f"--style raw --sref {SREF}"}
        await fake.slash(alice, general, "prefer option", saved)
        [answer] = await told(fake, alice, 1)
        assert answer.startswith("Saved: --neon stands for")
        offered = await fake.autocomplete(alice, general, "imagine", "prompt", "a city --ne")
        assert await fake.answered(offered) == 8
        choices = [c["value"] for c in offered.callbacks[0]["data"]["choices"]]
        assert choices == ["a city --neon"]

        await fake.slash(alice, general, "imagine", {"prompt": "a city --nein"})
        [_, refused] = await told(fake, alice, 2)
        assert "--nein is not one of your saved options (yours are --neon" in refused
        assert not creations(sim, "imagine"), "no provider call"

        await fake.slash(alice, general, "imagine", {"prompt": "a city --neon --v 6"})
        [sent] = await fake.wait_for(lambda: creations(sim, "imagine"), what="the imagine")
        assert sent.body["prompt"] == f"a city --style raw --sref {SREF} --v 6"


async def until_imagined(sim: RunningSimulator, count: int) -> None:
    """Wait (bounded: the queue looks every 2 s) until the provider was asked ``count`` times."""
    async with asyncio.timeout(15):
        while True:
            if len(creations(sim, "imagine")) >= count:
                return
            await asyncio.sleep(0.05)


def preview_of(fake: FakeDiscord, user: FakeUser) -> FakeMessage | None:
    return next((m for m in fake.ephemerals_for(user) if m.buttons), None)


def closed(preview: FakeMessage) -> bool:
    """Whether every button of ``preview`` is disabled (it can be pressed no more)."""
    return all(button.get("disabled") for button in preview.buttons)


async def test_a_cancelled_preview_keeps_its_text_and_no_button_that_works(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    db = tmp_path / "genbot.db"
    async with real_genbot(harness, sim, db, edit_window_seconds=QUICK_WINDOW) as genbot:
        await fake.slash(alice, general, "imagine", {"prompt": "{red, blue} fox"})
        preview = await fake.wait_for(lambda: preview_of(fake, alice), what="the preview")
        shown = preview.content
        assert not closed(preview)
        await fake.press(alice, preview, "Cancel")
        [_, cancelled] = await told(fake, alice, 2)
        assert cancelled == "Cancelled: nothing was started."
        await fake.wait_for(lambda: closed(preview), what="the preview's buttons disabled")
        assert preview.content == shown and preview.ephemeral
        assert [b["label"] for b in preview.buttons] == ["Run 2 jobs", "Cancel"]
        with pytest.raises(ValueError, match="disabled"):
            await fake.press(alice, preview, "Run 2 jobs")
        assert not await genbot.all_jobs() and not creations(sim, "imagine")


async def test_permutations_and_repeats_are_previewed_then_run_once(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, bob, general = fake.user("alice"), fake.user("bob"), fake.channel("general")
    db = tmp_path / "genbot.db"
    async with real_genbot(harness, sim, db, edit_window_seconds=QUICK_WINDOW) as genbot:
        await fake.slash(alice, general, "imagine", {"prompt": "{a, b, c} {d, e, f, g} fox"})
        [refused] = await told(fake, alice, 1)
        assert "This would start 12 jobs" in refused and "at most 10" in refused

        await fake.slash(alice, general, "imagine", {"prompt": "{red, blue} fox --repeat 2"})
        preview = await fake.wait_for(lambda: preview_of(fake, alice), what="the preview")
        assert preview.ephemeral
        imagine = next(
            c["id"] for c in fake.guild_commands[fake.guild_id] if c["name"] == "imagine"
        )
        assert (
            f"**4 jobs** of </imagine:{imagine}> in relax mode — estimated **16 credits** (4 × 4"
            in preview.content
        )
        assert "1. red fox\n2. red fox\n3. blue fox\n4. blue fox" in preview.content
        assert "Your daily budget left: 200 of 200 credits." in preview.content
        assert "lets 3 start now. The other 1 waits in the queue" in preview.content
        assert [b["label"] for b in preview.buttons] == ["Run 4 jobs", "Cancel"]
        assert not creations(sim, "imagine") and not await genbot.all_jobs()

        await fake.press(bob, preview, "Run 4 jobs")
        await fake.wait_for(lambda: ephemeral_texts(fake, bob), what="bob's refusal")
        assert "no record of these jobs" in ephemeral_texts(fake, bob)[0]

        await asyncio.gather(
            fake.press(alice, preview, "Run 4 jobs"), fake.press(alice, preview, "Run 4 jobs")
        )
        texts = await fake.wait_for(
            lambda: (t := ephemeral_texts(fake, alice))[3:] and t, what="both presses' answers"
        )
        answers = sorted(texts[2:])
        assert answers[1] == "These jobs were started already (their progress is in the channel)."
        assert answers[0] in (
            "All 4 jobs started.",
            "3 of 4 jobs started. 1 waits in the queue, starting when one of your jobs "
            "finishes (your cap of jobs at once).",
        ), "the 4th starts when a job of the three has finished: at once, or from the queue"
        await fake.wait_for(lambda: closed(preview), what="the preview's buttons disabled")
        assert "1. red fox\n2. red fox\n3. blue fox\n4. blue fox" in preview.content
        with pytest.raises(ValueError, match="disabled"):
            await fake.press(alice, preview, "Run 4 jobs")

        await until_imagined(sim, 4)
        prompts = sorted(r.body["prompt"] for r in creations(sim, "imagine"))
        assert prompts == ["blue fox", "blue fox", "red fox", "red fox"]
        await asyncio.sleep(0.3)
        assert len(await genbot.all_jobs()) == 4, "Run started the previewed jobs once"
