"""End to end, moderation on Slack: a prompt breaking a rule is refused privately with no
provider call, and its author's mention is then refused as banned — signed requests through the
real slack-bolt app, the real core and the simulator over HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.slack.end_to_end import JOB_TIME_SCALE, WAIT, budgeted_fake, slack_genbot
from tests.fakes.slack import FakeSlack

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with budgeted_fake() as slack:
        yield slack


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=JOB_TIME_SCALE)) as running:
        yield running


async def test_a_banned_prompt_is_refused_privately_then_its_author_is_banned(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENBOT_MODERATION__WORDS", json.dumps({"violence": ["kill"]}))
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        command = fake.slash_command("/imagine", "a fox that wants to K-I-L-L --ar 16:9")
        assert (await fake.post_command(bot.url, command)).status == 200
        (refusal,) = await fake.wait_for(lambda: fake.ephemerals, WAIT)
        assert (refusal.user, refusal.channel) == ("U1", "C1")
        assert "**violence**" in refusal.text or "*violence*" in refusal.text, refusal.text
        assert "60 min" in refusal.text and "K-I-L-L" in refusal.text

        mention = fake.user_says(f"<@{fake.bot_user_id}> hello")
        await fake.post_event(bot.url, fake.event_callback(fake.app_mention_event(mention)))
        _, banned = await fake.wait_for(lambda: fake.ephemerals[1:] and fake.ephemerals, WAIT)
        assert "no prompts from you until" in banned.text
        assert await bot.store.moderation.banned_until("slack", "U1")

        unban = fake.slash_command("/genbot", "admin moderation unban <@U1|alice>", user="U2")
        await fake.post_command(bot.url, unban)
        *_, lifted = await fake.wait_for(lambda: fake.ephemerals[2:] and fake.ephemerals, WAIT)
        assert "Lifted the ban of `U1`" in lifted.text
        assert await bot.store.moderation.banned_until("slack", "U1") is None
    assert sim.state.requests == [], "no provider call"
    assert fake.bot_messages() == []


async def test_an_admin_adds_lists_and_removes_a_workspace_rule(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:

        async def told(command: str, text: str, user: str) -> str:
            seen = len(fake.ephemerals)
            posted = await fake.post_command(bot.url, fake.slash_command(command, text, user=user))
            assert posted.status == 200
            answers = await fake.wait_for(lambda: fake.ephemerals[seen:], WAIT)
            return str(answers[0].text)

        assert "Only genbot admins" in await told("/genbot", "admin moderation add gory", "U1")
        added = await told("/genbot", 'admin moderation add "gory" --category gore', "U2")
        assert "Added the word `gory`" in added and "gore" in added
        assert "`gory`" in await told("/genbot", "admin moderation list", "U2")
        pattern = r"admin moderation add spl[a4]tter --pattern --category gore"
        assert "Added the pattern" in await told("/genbot", pattern, "U2")
        assert "cannot be used" in await told("/genbot", "admin moderation add (x --pattern", "U2")

        refusal = await told("/imagine", "a SPL4TTER fox", "U1")
        assert "**gore**" in refusal or "*gore*" in refusal, refusal
        assert "a SPL4TTER fox" in refusal
        assert sim.state.requests == [], "no provider call"

        assert "Removed `gory`" in await told("/genbot", "admin moderation remove gory", "U2")
        assert "`gory`" not in await told("/genbot", "admin moderation list", "U2")
        assert [rule.entry for rule in await bot.store.moderation.rules("slack", fake.team_id)] == [
            "spl[a4]tter"
        ]
