"""End to end, ``/genbot forget-me`` on Slack, an admin's for a user id: the user's jobs and
settings are counted privately, only an admin may name another user, and after the admin
presses "Delete all of their data" no table of the database names the user, another user's job
stays, and the audit log records the deletion under a pseudonym — signed requests through the
real slack-bolt app, the real core and the simulator over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from storage import ALL_STATUSES
from tests.adapters.slack.end_to_end import JOB_TIME_SCALE, WAIT, slack_genbot
from tests.fakes.slack import FakeSlack
from tests.storage.helpers import rows_naming

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")
GONE = "U0FORGET7"


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=JOB_TIME_SCALE)) as running:
        yield running


async def test_an_admin_forgets_a_user_and_no_row_names_them(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:

        async def command(text: str, user: str, slash: str = "/genbot") -> None:
            posted = await fake.post_command(bot.url, fake.slash_command(slash, text, user=user))
            assert posted.status == 200

        async def told(text: str, user: str) -> str:
            seen = len(fake.ephemerals)
            await command(text, user)
            answers = await fake.wait_for(lambda: fake.ephemerals[seen:], WAIT)
            return str(answers[0].text) + str(answers[0].blocks)

        await command("a lighthouse at dusk", GONE, "/imagine")
        await command("an owl", "U1", "/imagine")
        assert "Saved" in await told("settings --ar 16:9", GONE)
        # Slack's acknowledgement comes before the job is stored; its progress message after.
        await fake.wait_for(lambda: len(fake.calls_to("chat.postMessage")) >= 2 or None, WAIT)
        for job in await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES):
            await bot.settled(job.id)
        assert set(await rows_naming(bot.store, GONE)) >= {"jobs", "usage", "scope_settings"}

        refused = await told(f"forget-me <@{GONE}|gone>", "U1")
        assert "Only genbot admins can delete another user's data" in refused
        seen = len(fake.ephemerals)
        await command(f"forget-me <@{GONE}|gone>", "U2")
        [preview] = await fake.wait_for(lambda: fake.ephemerals[seen:], WAIT)
        shown = preview.text + str(preview.blocks)
        assert f"What genbot keeps about user `{GONE}`" in shown
        assert "Jobs (prompts, parameters, result links): 1" in shown
        assert "Personal settings: 1" in shown

        seen = len(fake.ephemerals)
        button = preview.button("Delete all of their data")
        press = fake.ephemeral_block_actions(preview, button["action_id"])
        assert (await fake.post_interactive(bot.url, press)).status == 200
        [done] = await fake.wait_for(lambda: fake.ephemerals[seen:], WAIT)
        assert f"The data of user `{GONE}` on slack is deleted" in done.text + str(done.blocks)

        assert await rows_naming(bot.store, GONE) == {}
        owls = await bot.store.db.fetch_all("SELECT requester_id FROM jobs")
        assert owls == [{"requester_id": "U1"}], "another user's job stays"
        [entry] = await bot.store.audit.entries("slack", fake.team_id, kind="user.forgotten")
        assert entry.actor_id == "U2" and entry.target.startswith("erased-")
        assert entry.after["jobs"] == 1
