"""End to end, the archive on Slack: ``/genbot jobs`` finds a job by a word of its prompt
(privately), ``/genbot show`` posts it again in another channel with working buttons (U1 on the
copy starts the right upscale), ℹ️ Image info in the upscale's overflow menu shows its parent
chain (users and channels as Slack's own mentions, ``<@U1>``, ``<#C2>``), and
``/genbot jobs export`` uploads a zip into the user's DM (a note where they asked says so) whose
manifest matches the job — signed requests through the real slack-bolt app, the real core and
the simulator over HTTP."""

from __future__ import annotations

import io
import json
import zipfile
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
        assert f" · <#C1> · `{grid.id}`" in found, "Slack's own channel mention"
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
        asked = f"Asked by <@{upscale.requester_id}> on "
        assert asked in str(shown.blocks) and "in <#C2>" in str(shown.blocks)
        assert "&lt;@" not in shown.text + str(shown.blocks) + found


async def test_the_export_is_a_zip_in_the_users_dm_whose_manifest_matches(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        await fake.post_command(bot.url, fake.slash_command("/imagine", "a lighthouse at dusk"))
        await fake.wait_for(bot_message_with_button(fake, "C1", "U1"), WAIT)
        [made] = await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES)
        grid = await bot.settled(made.id)

        seen = len(fake.ephemerals)
        asked = fake.slash_command("/genbot", "jobs export --type imagine")
        assert (await fake.post_command(bot.url, asked)).status == 200
        [note] = await fake.wait_for(lambda: fake.ephemerals[seen:], WAIT)
        assert "to your direct messages with genbot" in note.text
        [sent] = [m for m in fake.bot_messages("D1") if m.files]
        assert "1 job, 1 image" in sent.text
        [file] = sent.files
        assert file.name.endswith(".zip") and file.data is not None
        with zipfile.ZipFile(io.BytesIO(file.data)) as archive:
            [entry] = json.loads(archive.read("manifest.json"))["jobs"]
            assert (entry["id"], entry["prompt"]) == (grid.id, "a lighthouse at dusk")
            assert archive.read(entry["files"][0])[:4] == b"\x89PNG"
        assert not fake.bot_messages("C1")[-1].files, "nothing in the channel"
