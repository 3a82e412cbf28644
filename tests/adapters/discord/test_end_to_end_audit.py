"""End to end, the audit log on Discord: a refusal and the ban it earned are recorded, and
``/admin audit --export`` hands the admin a JSON-lines file privately — through the real
discord.py, the fake Discord, the real core and the simulator over HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import QUICK_BUCKET, QUICK_WINDOW, real_genbot
from tests.adapters.discord.test_end_to_end_moderation import AdminHarness
from tests.fakes.discord import FakeDiscord

pytestmark = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)


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


async def test_a_refusal_and_its_ban_are_exported_privately_as_json_lines(
    harness: Harness, sim: RunningSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENBOT_MODERATION__WORDS", json.dumps({"nsfw": ["nude"]}))
    fake = harness.fake
    carol, alice, general = fake.user("carol"), fake.user("alice"), fake.channel("general")
    async with real_genbot(harness, sim, tmp_path / "genbot.db", edit_window_seconds=QUICK_WINDOW):
        await fake.slash(alice, general, "imagine", {"prompt": "a nude fox"})
        await fake.wait_for(lambda: fake.ephemerals_for(alice), what="the refusal")

        await fake.slash(carol, general, "admin audit", {"user": f"<@{alice.id}>"})
        [listed] = await fake.wait_for(lambda: fake.ephemerals_for(carol), what="the log")
        assert "**moderation.banned** by `genbot`" in listed.content
        assert "**moderation.refused**" in listed.content
        assert f"`{alice.id}` in <#{general.id}>" in listed.content, "Discord's channel mention"

        await fake.slash(carol, general, "admin audit", {"export": True, "kind": "moderation"})
        _, note = await fake.wait_for(
            lambda: fake.ephemerals_for(carol)[1:] and fake.ephemerals_for(carol),
            what="the export",
        )
        assert "to your direct messages" in note.content
        [exported] = fake.bot_messages(fake.dm_channel(carol).id)
        [file] = exported.attachments
        assert file.filename.endswith(".jsonl") and "2 matching entries" in exported.content
        lines = [json.loads(line) for line in file.data.decode().splitlines()]
        assert [line["kind"] for line in lines] == ["moderation.banned", "moderation.refused"]
        assert lines[1]["after"]["category"] == "nsfw" and lines[1]["actor_id"] == str(alice.id)
        assert lines[1]["channel_id"] == str(general.id) and lines[1]["at"].endswith("Z")
    assert not sim.state.requests_to("/gen/"), "no provider call"
