"""End to end, prompt translation on Discord (issue 31 item 5): with ``[prompts] translate =
"auto"`` a Japanese ``/imagine`` with ``--ar 16:9`` reaches the simulator in English with
``--ar 16:9`` as written, and its grid shows both prompts; with ``"ask"`` the private offer's
**Translate to English?** does the same, and refuses a translation that breaks a rule as if
typed — through the real discord.py, the fake Discord, the real core (as genbot/compose.py
wires it) and the simulator over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.kernel import PromptsSettings
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from storage import ModerationRule
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import (
    QUICK_BUCKET,
    QUICK_WINDOW,
    creations,
    ephemeral_texts,
    newest,
    real_genbot,
    with_image,
)
from tests.fakes.discord import FakeDiscord, FakeMessage, FakeUser

pytestmark = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)

JAPANESE = "夕暮れの灯台 --ar 16:9"
ENGLISH = "a lighthouse at dusk --ar 16:9"


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=0.003, seed=5)) as running:
        yield running


def translations(sim: RunningSimulator) -> list[str]:
    """What the chat model was asked to translate."""
    return [r.body["messages"][-1]["content"] for r in sim.state.requests_to("/v1/chat/")]


async def grid_of(fake: FakeDiscord) -> FakeMessage:
    general = fake.channel("general")

    def found() -> FakeMessage | None:
        return newest(
            fake.bot_messages(general.id),
            lambda m: with_image(m) and any(b.get("label") == "U1" for b in m.buttons),
        )

    return await fake.wait_for(found, 10.0, "the grid")


def offer_of(fake: FakeDiscord, user: FakeUser) -> FakeMessage | None:
    return next((m for m in fake.ephemerals_for(user) if m.buttons), None)


async def test_auto_a_japanese_prompt_reaches_the_simulator_in_english_with_its_ar_intact(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    auto = PromptsSettings(translate="auto")
    db = tmp_path / "genbot.db"
    async with real_genbot(harness, sim, db, edit_window_seconds=QUICK_WINDOW, prompts=auto):
        interaction = await fake.slash(alice, general, "imagine", {"prompt": JAPANESE})
        assert await fake.answered(interaction) == 5
        grid = await grid_of(fake)

        [sent] = creations(sim, "imagine")
        assert sent.body["prompt"] == ENGLISH
        assert translations(sim) == ["夕暮れの灯台"]
        assert "a lighthouse at dusk" in grid.text
        assert "🌐 Translated from: 夕暮れの灯台 --ar 16:9" in grid.text


async def test_ask_translate_to_english_runs_it_in_english(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    ask = PromptsSettings(translate="ask")
    db = tmp_path / "genbot.db"
    async with real_genbot(harness, sim, db, edit_window_seconds=QUICK_WINDOW, prompts=ask):
        await fake.slash(alice, general, "imagine", {"prompt": JAPANESE})
        offer = await fake.wait_for(lambda: offer_of(fake, alice), what="the offer")
        assert offer.ephemeral
        assert [b["label"] for b in offer.buttons] == ["Translate to English?", "Run as written"]
        assert not creations(sim, "imagine") and not translations(sim)

        await fake.press(alice, offer, "Translate to English?")
        await grid_of(fake)
        [sent] = creations(sim, "imagine")
        assert sent.body["prompt"] == ENGLISH
        assert f"Translated into English: {ENGLISH}" in ephemeral_texts(fake, alice)


async def test_ask_a_translation_breaking_a_rule_is_refused_as_if_typed(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    """A workspace rule in English that the Japanese prompt does not match: its translation
    does, and is refused with the offence typing it would earn; nothing is imagined."""
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    ask = PromptsSettings(translate="ask")
    db = tmp_path / "genbot.db"
    async with real_genbot(
        harness, sim, db, edit_window_seconds=QUICK_WINDOW, prompts=ask
    ) as genbot:
        rule = ModerationRule("lights", "lighthouse")
        assert await genbot.store.moderation.add_rule("discord", str(fake.guild_id), rule, "root")
        await fake.slash(alice, general, "imagine", {"prompt": JAPANESE})
        offer = await fake.wait_for(lambda: offer_of(fake, alice), what="the offer")

        await fake.press(alice, offer, "Translate to English?")

        def refused() -> str | None:
            return next((t for t in ephemeral_texts(fake, alice) if "Refused" in t), None)

        told = await fake.wait_for(refused, what="the refusal")
        assert "**lights**" in told and "1st" in told and ENGLISH in told
        assert translations(sim) == ["夕暮れの灯台"] and not creations(sim, "imagine")
        assert await genbot.store.moderation.banned_until("discord", str(alice.id)) is not None
