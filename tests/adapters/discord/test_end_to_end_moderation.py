"""End to end, moderation on Discord: a prompt breaking a rule is refused privately with no
provider call and no job, and its author is banned (a slash command and a mention) — through
the real discord.py, the fake Discord, the real core and the simulator over HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.settings import DiscordSettings
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import (
    QUICK_BUCKET,
    QUICK_WINDOW,
    ephemeral_texts,
    real_genbot,
)
from tests.fakes.discord import FakeDiscord

pytestmark = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)


class AdminHarness(Harness):
    """The harness whose adapter takes ``carol`` for a genbot admin."""

    def settings(self, **overrides: Any) -> DiscordSettings:
        admins = {"admin_ids": [self.fake.user("carol").id]}
        return super().settings(**(admins | overrides))


@pytest.fixture
async def harness(fake: FakeDiscord) -> AsyncIterator[Harness]:
    errors: list[tuple[str, BaseException]] = []
    harness = AdminHarness(fake, errors)
    yield harness
    await harness.stop_all()
    assert not errors, f"errors while handling Discord traffic: {errors}"


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=0.003, seed=11)) as running:
        yield running


async def test_a_banned_prompt_is_refused_privately_and_bans_its_author(
    harness: Harness, sim: RunningSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENBOT_MODERATION__WORDS", json.dumps({"nsfw": ["nude"]}))
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    db = tmp_path / "genbot.db"
    async with real_genbot(harness, sim, db, edit_window_seconds=QUICK_WINDOW) as genbot:
        interaction = await fake.slash(alice, general, "imagine", {"prompt": "a ｎ.ｕ.ｄ.ｅ fox"})
        assert await fake.answered(interaction) == 5
        [told] = await fake.wait_for(lambda: ephemeral_texts(fake, alice), what="the refusal")
        assert "**nsfw**" in told and "60 min" in told
        assert "a ｎ.ｕ.ｄ.ｅ fox" in told, "the prompt is given back to edit"

        await fake.user_message(alice, general, f"{fake.bot.mention} hello")
        banned = await fake.wait_for(
            lambda: [m for m in fake.bot_messages(general.id) if "no prompts" in m.content],
            what="the ban's answer to a mention",
        )
        assert "until" in banned[0].content
        assert await genbot.store.moderation.banned_until("discord", str(alice.id))
        assert not await genbot.all_jobs()
        assert not fake.threads_in(general.id), "no conversation was opened"
    assert not sim.state.requests_to("/gen/"), "no provider call"
    assert not sim.state.requests_to("/v1/chat/completions")


async def test_an_admin_adds_a_server_rule_that_refuses_prompts_there(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    carol, alice, general = fake.user("carol"), fake.user("alice"), fake.channel("general")
    db = tmp_path / "genbot.db"
    async with real_genbot(harness, sim, db, edit_window_seconds=QUICK_WINDOW) as genbot:
        add = {"action": "add", "entry": "gory", "category": "gore"}
        await fake.slash(alice, general, "admin moderation", add)
        [refused] = await fake.wait_for(lambda: ephemeral_texts(fake, alice), what="a refusal")
        assert "Only genbot admins" in refused
        await fake.slash(carol, general, "admin moderation", add)
        [added] = await fake.wait_for(lambda: ephemeral_texts(fake, carol), what="the answer")
        assert "Added the word `gory` to **gore**" in added

        await fake.slash(alice, general, "imagine", {"prompt": "a gory fox"})
        _, told = await fake.wait_for(
            lambda: ephemeral_texts(fake, alice)[1:] and ephemeral_texts(fake, alice),
            what="the refusal",
        )
        assert "**gore**" in told
        assert not await genbot.all_jobs()
        assert [r.entry for r in await genbot.store.moderation.rules("discord", str(fake.guild_id))]
    assert not sim.state.requests_to("/gen/"), "no provider call"


async def test_a_document_breaking_a_rule_is_refused_before_the_model_reads_it(
    harness: Harness, sim: RunningSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENBOT_MODERATION__WORDS", json.dumps({"nsfw": ["nude"]}))
    fake = harness.fake
    alice, bob, general = fake.user("alice"), fake.user("bob"), fake.channel("general")
    dm = fake.dm_channel(bob)
    story = ("story.md", b"# Chapter 1\nA n-u-d-e swimmer at dawn.", "text/markdown")
    db = tmp_path / "genbot.db"
    async with real_genbot(harness, sim, db, edit_window_seconds=QUICK_WINDOW) as genbot:
        interaction = await fake.slash(
            alice, general, "chat", {"prompt": "Summarize it"}, attachments={"file": story}
        )
        await fake.answered(interaction)
        [told] = await fake.wait_for(lambda: ephemeral_texts(fake, alice), what="the refusal")
        assert told.startswith("Refused: the document story.md matches genbot's rules on **nsfw**")
        assert "60 min" in told and "swimmer" not in told

        await fake.user_message(bob, dm, "What happens here?", attachments=(story,))
        [refused] = await fake.wait_for(lambda: fake.bot_messages(dm.id), what="the refusal")
        assert refused.content.startswith("Refused: the document story.md matches")

        for user in (alice, bob):
            assert await genbot.store.moderation.banned_until("discord", str(user.id))
        assert not fake.threads_in(general.id), "no conversation was opened"
        assert await genbot.store.db.fetch_all("SELECT content FROM messages") == []
    assert not sim.state.requests_to("/v1/chat/completions"), "no provider call"
