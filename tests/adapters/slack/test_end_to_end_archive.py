"""End to end, the archive on Slack: ``/genbot jobs`` finds a job by a word of its prompt
(privately), ``/genbot show`` posts it again in another channel with working buttons (U1 on the
copy starts the right upscale), and ℹ️ Image info in the upscale's overflow menu shows its
parent chain — signed requests through the real slack-bolt app, the real core and the
simulator over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from storage import ALL_STATUSES
from tests.adapters.slack.end_to_end import (
    JOB_TIME_SCALE,
    WAIT,
    bot_message_with_button,
    slack_genbot,
)
from tests.fakes.slack import FakeSlack

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=JOB_TIME_SCALE)) as running:
        yield running


async def test_search_show_u1_on_the_copy_and_info_with_the_parent_chain(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:

        async def told(command: str, text: str, channel: str = "C1") -> str:
            seen = len(fake.ephemerals)
            slash = fake.slash_command(command, text, channel=channel)
            assert (await fake.post_command(bot.url, slash)).status == 200
            answers = await fake.wait_for(lambda: fake.ephemerals[seen:], WAIT)
            return str(answers[0].text) + str(answers[0].blocks)

        await fake.post_command(bot.url, fake.slash_command("/imagine", "a lighthouse at dusk"))
        await fake.wait_for(bot_message_with_button(fake, "C1", "U1"), WAIT)
        [made] = await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES)
        grid = await bot.settled(made.id)

        found = await told("/genbot", "jobs LIGHTHOUSE --type imagine")
        assert grid.id in found and "lighthouse at dusk" in found
        assert "No finished job matches" in await told("/genbot", "jobs lighthouse --type blend")
        assert "not a job id" in await told("/genbot", "show ???")

        await fake.post_command(
            bot.url, fake.slash_command("/genbot", f"show {grid.id}", channel="C2")
        )
        copy = await fake.wait_for(bot_message_with_button(fake, "C2", "U1"), WAIT)
        press = fake.block_actions(copy, copy.button("U1")["action_id"])
        assert (await fake.post_interactive(bot.url, press)).status == 200
        upscaled = await fake.wait_for(bot_message_with_button(fake, "C2", "Vary (Strong)"), WAIT)
        [made] = [
            j
            for j in await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES)
            if j.type == "upscale"
        ]
        upscale = await bot.settled(made.id)
        assert (upscale.parent_job_id, upscale.channel_id) == (grid.id, "C2")

        assert "ℹ️" not in [b["text"]["text"] for b in upscaled.buttons]
        assert upscaled.menu_items == ["ℹ️ Image info"]
        seen = len(fake.ephemerals)
        info = fake.overflow_actions(upscaled, "ℹ️ Image info")
        assert (await fake.post_interactive(bot.url, info)).status == 200
        [shown] = await fake.wait_for(lambda: fake.ephemerals[seen:], WAIT)
        assert f"`{upscale.id}`" in shown.text + str(shown.blocks)
        assert grid.id in str(shown.blocks) and "a lighthouse at dusk" in str(shown.blocks)
