"""End to end, the audit log on Slack: an admin's settings, rules and ban, a refusal and the
ban it earned are recorded, and ``/genbot admin audit`` shows them to admins only, filtered —
signed requests through the real slack-bolt app, the real core and the simulator over HTTP."""

from __future__ import annotations

import json
import re
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


async def test_admin_actions_refusals_and_bans_are_recorded_and_shown_to_admins(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENBOT_MODERATION__WORDS", json.dumps({"violence": ["kill"]}))
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:

        async def told(command: str, text: str, user: str) -> str:
            seen = len(fake.ephemerals)
            posted = await fake.post_command(bot.url, fake.slash_command(command, text, user=user))
            assert posted.status == 200
            answers = await fake.wait_for(lambda: fake.ephemerals[seen:], WAIT)
            return str(answers[0].text)

        assert "Saved this channel's defaults" in await told(
            "/genbot", "settings --scope channel --n 2", "U2"
        )
        assert "Added the word" in await told("/genbot", "admin moderation add gory", "U2")
        assert "60 min" in await told("/imagine", "a fox that wants to kill", "U1")
        assert "Banned `U3` until" in await told(
            "/genbot", "admin moderation ban <@U3|carl> --minutes 30", "U2"
        )
        assert "no prompts from you until" in await told("/imagine", "a calm fox", "U3")
        assert "Only genbot admins" in await told("/genbot", "admin audit", "U1")

        shown = await told("/genbot", "admin audit", "U2")
        kinds = re.findall(r"^• \S+ \S+ \*+([a-z_.]+)\*+", shown, re.MULTILINE)
        assert kinds == [
            "moderation.refused",
            "moderation.banned",
            "moderation.banned",
            "moderation.refused",
            "moderation.rule_added",
            "settings.changed",
        ]
        assert '{"n":null} → {"n":2}' in shown
        assert "by `genbot` `U1`" in shown, "the ban U1 earned is genbot's"
        assert "`U1` in <#C1>" in shown and "&lt;#" not in shown, "Slack's channel mention"

        about_u3 = await told("/genbot", "admin audit <@U3> --kind moderation.banned", "U2")
        [line] = [line for line in about_u3.splitlines() if line.startswith("•")]
        assert "by `U2` `U3`" in line and '"minutes":30' in line
        export = await told("/genbot", "admin audit --days 1 --export", "U2")
        assert "to your direct messages with genbot" in export
        [sent] = [m for m in fake.bot_messages("D2") if m.files]
        assert sent.files[0].name.endswith(".jsonl") and sent.files[0].data

        entries = await bot.store.audit.entries("slack", fake.team_id)
        assert {e.channel_id for e in entries} == {"C1"}
        refused = [e for e in entries if e.kind == "moderation.refused" and e.actor_id == "U1"]
        assert refused[0].after["category"] == "violence"
    assert sim.state.requests == [], "no provider call"
