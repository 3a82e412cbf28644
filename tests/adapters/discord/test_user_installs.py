"""genbot added to a user's account, used in a server it is not a member of: commands are
installable for users and usable in DMs and group DMs, answers go through the interaction (it
cannot post in the channel), and a result after Discord's 15 minutes reaches the user by DM."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import QUICK_BUCKET, QUICK_WINDOW, real_genbot
from tests.fakes.discord import FakeMessage

pytestmark = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)
MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(MANUAL) as running:
        yield running


def hook_edits(harness: Harness, app: int, token: str) -> list[str]:
    return [
        r.path for r in harness.fake.requests_to("PATCH", f"/webhooks/{app}/{token}/messages/.*")
    ]


async def test_a_user_install_answers_through_the_interaction_then_by_dm(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, elsewhere = fake.user("alice"), fake.channel("general")
    fake.user_installed_channels.add(elsewhere.id)
    async with real_genbot(
        harness, sim, tmp_path / "genbot.db", edit_window_seconds=QUICK_WINDOW
    ) as genbot:
        imagine = fake.registered_command("imagine", elsewhere)
        assert (imagine["integration_types"], imagine["contexts"]) == ([0, 1], [0, 1, 2])
        genbot.adapter.surface.hook_seconds = 1
        interaction = await fake.slash(alice, elsewhere, "imagine", {"prompt": "a red fox"})
        assert await fake.answered(interaction) == 5
        progress = await fake.wait_for(
            lambda: (
                (m := fake.messages.get(interaction.original_message_id or 0))
                and "a red fox" in m.text
                and m
            ),
            what="the progress message in the interaction's answer",
        )
        assert isinstance(progress, FakeMessage) and not progress.ephemeral
        assert fake.requests_to("POST", f"/channels/{elsewhere.id}/messages") == []
        assert hook_edits(harness, fake.app_id, interaction.token)

        await asyncio.sleep(1.1)
        sim.advance(120)
        [job] = await genbot.all_jobs()
        done = await genbot.jobs.watch.wait(job.id, ["posted"], 10.0)

    dm = fake.dm_channel(alice)
    [result] = fake.bot_messages(dm.id)
    assert done.result_message_id == str(result.id) and result.attachments
    assert f"genbot cannot post in <#{elsewhere.id}> any more" in result.text
    assert "a red fox" in progress.text and not progress.attachments, (
        "the channel kept the progress"
    )
