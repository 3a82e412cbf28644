"""A Slack group DM (``mpim``: id ``G…`` or ``C…``, name ``mpdm-…``) is a private place, as a
group DM is on Discord: its jobs stay out of admins' reach from elsewhere and out of
workspace-wide searches; genbot answers there only when mentioned (found by qa4)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.refs import NO_JOB, NOT_YOURS
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
from tests.fakes.slack_model import FakeMessage

GROUP_DM = "G0MPIM123"
CHANNEL_GROUP_DM = "C0MPIM456"


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=JOB_TIME_SCALE)) as running:
        yield running


async def test_a_group_dms_job_is_private_to_it_and_its_requester(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake.users["U3"] = "carol"
    fake.group_dm(GROUP_DM, "U1", "U3")
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:

        async def told(text: str, user: str, channel: str) -> str:
            seen = len(fake.ephemerals)
            slash = fake.slash_command("/genbot", text, user=user, channel=channel)
            assert (await fake.post_command(bot.url, slash)).status == 200
            answers = await fake.wait_for(lambda: fake.ephemerals[seen:], WAIT)
            return str(answers[0].text) + str(answers[0].blocks)

        slash = fake.slash_command("/imagine", "a surprise party for carol", channel=GROUP_DM)
        assert slash["channel_name"] == "mpdm-alice--carol-1"
        assert (await fake.post_command(bot.url, slash)).status == 200
        grid = await fake.wait_for(bot_message_with_button(fake, GROUP_DM, "U1"), WAIT)
        [made] = await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES)
        job = await bot.settled(made.id)
        assert (job.channel_id, job.is_dm) == (GROUP_DM, True)

        found = await told("jobs --scope workspace", "U2", "C1")
        assert "surprise party" not in found, "an admin elsewhere searches the workspace"
        assert NO_JOB in await told(f"show {job.id}", "U2", "C1")
        assert fake.bot_messages("C1") == []

        seen = len(fake.ephemerals)
        press = fake.block_actions(grid, grid.button("U1")["action_id"], user="U3")
        assert (await fake.post_interactive(bot.url, press)).status == 200
        [refused] = await fake.wait_for(lambda: fake.ephemerals[seen:], WAIT)
        assert refused.text == NOT_YOURS, "another member of the group DM"

        await fake.post_command(
            bot.url, fake.slash_command("/genbot", f"show {job.id}", user="U1", channel="C2")
        )
        await fake.wait_for(bot_message_with_button(fake, "C2", "U1"), WAIT)


def _answer(fake: FakeSlack, channel: str, mention: FakeMessage) -> FakeMessage | None:
    found = [m for m in fake.thread(channel, mention.ts) if m.user == fake.bot_user_id]
    return found[0] if found and not found[0].streaming and found[0].markdown else None


async def test_a_mention_in_a_group_dm_is_answered_as_in_a_dm_and_other_messages_are_not(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake.group_dm(CHANNEL_GROUP_DM, "U1", "U2")
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        mention = fake.user_says(f"<@{fake.bot_user_id}> echo: hello", channel=CHANNEL_GROUP_DM)
        event = fake.app_mention_event(mention)
        assert "channel_type" not in event, "as Slack sends it"
        await fake.post_event(bot.url, fake.event_callback(event))
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(mention)))
        answer = await fake.wait_for(lambda: _answer(fake, CHANNEL_GROUP_DM, mention), WAIT)
        assert answer.markdown == "hello"
        conversation = await bot.store.conversations.find_conversation_by_message(
            "slack", CHANNEL_GROUP_DM, mention.ts
        )
        assert conversation is not None and conversation.kind == "dm"
        [start] = fake.calls_to("chat.startStream")
        assert start.args["recipient_user_id"] == "U1", "a group DM is not the user's own DM"

        chatter = fake.user_says("echo: not for genbot", user="U2", channel=CHANNEL_GROUP_DM)
        reply = fake.user_says(
            "echo: nor this", user="U2", channel=CHANNEL_GROUP_DM, thread_ts=mention.ts
        )
        for said in (chatter, reply):
            await fake.post_event(bot.url, fake.event_callback(fake.message_event(said)))
        again = fake.user_says(f"<@{fake.bot_user_id}> echo: again", channel=CHANNEL_GROUP_DM)
        await fake.post_event(bot.url, fake.event_callback(fake.app_mention_event(again)))
        await fake.wait_for(lambda: _answer(fake, CHANNEL_GROUP_DM, again), WAIT)

    def genbots(ts: str) -> list[FakeMessage]:
        return [m for m in fake.thread(CHANNEL_GROUP_DM, ts) if m.user == fake.bot_user_id]

    assert genbots(chatter.ts) == [] and len(genbots(mention.ts)) == 1
    assert len(fake.calls_to("conversations.info")) == 1, "asked once, then kept"
