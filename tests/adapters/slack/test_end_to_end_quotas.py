"""End to end, quota tiers on Slack: a tier mapped from a Slack user group applies to its
members — the adapter reads the groups with ``usergroups.list`` (once for many events, within a
bounded wait) and a failed read leaves users in the default tier — through the real slack-bolt
app, the fake Slack, the real core and the simulator over HTTP."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.slack.end_to_end import JOB_TIME_SCALE, WAIT, budgeted_fake, slack_genbot
from tests.fakes.slack import FakeSlack

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")

TIERS = [
    {
        "name": "patrons",
        "daily_credits": 50,
        "modes": ["relax", "fast"],
        "roles": ["slack:S0PATRONS"],
    }
]


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with budgeted_fake() as slack:
        slack.usergroups["S0PATRONS"] = ("patrons", ["U1"])
        yield slack


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=JOB_TIME_SCALE)) as running:
        yield running


def imagined(sim: RunningSimulator) -> int:
    return len(sim.state.requests_to("/gen/v2/imagine"))


async def test_a_tier_mapped_from_a_user_group_applies_to_its_members(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENBOT_QUOTAS__TIERS", json.dumps(TIERS))
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        await fake.post_command(bot.url, fake.slash_command("/imagine", "a fox --turbo"))
        (refusal,) = await fake.wait_for(lambda: fake.ephemerals, WAIT)
        assert refusal.user == "U1"
        assert refusal.text.startswith("Turbo mode is not in your tier *patrons*"), refusal.text

        bobs = fake.slash_command("/imagine", "a fox --turbo", user="U2")
        await fake.post_command(bot.url, bobs)
        await fake.wait_for(lambda: imagined(sim) == 1 or None, WAIT)

        await fake.post_command(bot.url, fake.slash_command("/genbot", "usage"))
        _, usage = await fake.wait_for(lambda: fake.ephemerals[1:] and fake.ephemerals, WAIT)
        assert "Your tier: *patrons*" in usage.text, usage.text
        await fake.post_event(bot.url, fake.event_callback(fake.app_home_opened_event("U1", "D1")))
        await fake.wait_for(lambda: fake.calls_to("views.publish") or None, WAIT)
        home = json.dumps(fake.home_of("U1"))
        assert "image credits of your 50 a day" in home, home
        assert len(fake.calls_to("usergroups.list")) == 1, "read once for every event"
        assert imagined(sim) == 1


async def test_a_failed_user_group_read_leaves_its_members_in_the_default_tier(
    fake: FakeSlack,
    sim: RunningSimulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("GENBOT_QUOTAS__TIERS", json.dumps(TIERS))
    fake.fail_next("usergroups.list", "missing_scope")
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        await fake.post_command(bot.url, fake.slash_command("/imagine", "a fox --turbo"))
        await fake.wait_for(lambda: imagined(sim) == 1 or None, WAIT)
        assert fake.ephemerals == []
        warned = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert any("usergroups.list failed" in r.getMessage() for r in warned)
