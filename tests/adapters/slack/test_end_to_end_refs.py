"""A signed press from another workspace reaches nothing of this one (:mod:`bot.refs`), on the
real adapter and core against the fake Slack and the simulator: neither a job's button (even
from a channel open to everyone there) nor a conversation's ``Use llm-4-vision-preview``."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.refs import NO_CONVERSATION, NO_JOB
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from storage import ALL_STATUSES
from tests.adapters.slack.end_to_end import (
    WAIT,
    bot_message_with_button,
    slack_genbot,
)
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_model import FakeMessage

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")

CHAT_PATH = "/v1/chat/completions"
OTHER_TEAM = "T0OTHER"
OPEN_THERE = "COPEN"
"""A channel of the other workspace that genbot's settings open to everyone."""


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=0.003)) as running:
        yield running


def forged_press(fake: FakeSlack, pressed: FakeMessage, action_id: str) -> dict[str, object]:
    """A press by U9 of the other workspace, in its open channel, on its own message, of the
    button ``action_id`` (signed like every request Slack sends)."""
    here = fake.user_says("hello", user="U9", channel=OPEN_THERE)
    payload = copy.deepcopy(fake.block_actions(pressed, pressed.buttons[0]["action_id"]))
    payload["team"] = {"id": OTHER_TEAM, "domain": "other"}
    payload["user"] = {"id": "U9", "username": "mallory", "name": "mallory", "team_id": OTHER_TEAM}
    payload["channel"] = {"id": OPEN_THERE, "name": "open"}
    payload["container"] = {**payload["container"], "channel_id": OPEN_THERE}
    payload["container"]["message_ts"] = here.ts
    payload["message"] = here.payload()
    payload["actions"][0]["action_id"] = action_id
    return payload


async def test_a_press_from_another_workspace_names_nothing_here(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with FakeSlack() as fake, slack_genbot(fake, sim, tmp_path / "g.db") as bot:
        fake.users["U9"] = "mallory"
        secret = fake.user_says("echo: my locker code is 4711", channel="D1")
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(secret)))
        await fake.wait_for(lambda: fake.bot_messages("D1") or None, WAIT)
        await fake.post_command(bot.url, fake.slash_command("/imagine", "a heron", channel="C1"))
        grid = await fake.wait_for(bot_message_with_button(fake, "C1", "U1"), WAIT)
        job_button = next(b["action_id"] for b in grid.buttons if b["text"]["text"] == "U1")
        conversation = await bot.store.conversations.find_conversation_by_message(
            "slack", "D1", secret.ts
        )
        assert conversation is not None
        jobs_before = await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES)
        chats_before = len(sim.state.requests_to(CHAT_PATH))

        for action_id in (job_button, f"gb:chat_vision:{conversation.id}"):
            await fake.post_interactive(bot.url, forged_press(fake, grid, action_id))
        refusals = await fake.wait_for(
            lambda: [e.text for e in fake.ephemerals] if len(fake.ephemerals) >= 2 else None,
            WAIT,
        )
        after = await bot.store.conversations.get_conversation(conversation.id)
        jobs_after = await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES)

    assert sorted(refusals) == sorted([NO_JOB, NO_CONVERSATION])
    assert fake.bot_messages(OPEN_THERE) == [], "nothing of this workspace is shown there"
    assert len(sim.state.requests_to(CHAT_PATH)) == chats_before
    assert sim.state.requests_to("/gen/v2/upscale") == []
    assert after == conversation
    assert [job.id for job in jobs_after] == [job.id for job in jobs_before]
