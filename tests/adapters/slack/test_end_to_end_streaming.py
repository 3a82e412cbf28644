"""Native streaming end to end: the real bolt app and core, the fake Slack, the simulator.

DMs and mentions are streamed with ``chat.startStream`` / ``appendStream`` / ``stopStream``;
where Slack refuses, or the stream outlives Slack's window, the answer is posted and updated.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest

from bot.features.chat.renderer import MARKER
from bot.outbox import pacing
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.slack.end_to_end import WAIT, slack_genbot
from tests.fakes import slack_streaming
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_model import FakeMessage
from tests.fakes.slack_streaming import DEFAULT_TIERS

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")

ANSWER = " ".join(f"otter{number}" for number in range(60))
"""Streamed in some 50 pieces, 20 ms apart: about a second."""
TIER_WINDOW = 2.0
"""Seconds of Slack's per-minute tiers, shortened for the tight-tier test (genbot and the fake)."""


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=1.0)) as running:
        yield running


def done(fake: FakeSlack, channel: str, text: str) -> FakeMessage | None:
    """The bot's message in ``channel`` that shows ``text`` and no longer streams."""
    found = [m for m in fake.bot_messages(channel) if m.markdown == text and not m.streaming]
    return found[0] if found else None


async def ask(fake: FakeSlack, bot_url: str, text: str, channel: str = "C1") -> FakeMessage:
    if channel.startswith("D"):
        message = fake.user_says(text, channel=channel)
        await fake.post_event(bot_url, fake.event_callback(fake.message_event(message)))
    else:
        message = fake.user_says(f"<@{fake.bot_user_id}> {text}", channel=channel)
        await fake.post_event(bot_url, fake.event_callback(fake.app_mention_event(message)))
    return message


async def test_a_dm_streams_into_the_thread_of_the_question(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with FakeSlack() as fake, slack_genbot(fake, sim, tmp_path / "g.db") as bot:
        question = await ask(fake, bot.url, f"echo: {ANSWER}", channel="D1")

        answer = await fake.wait_for(lambda: done(fake, "D1", ANSWER), WAIT)

        assert answer.thread_ts == question.ts
        (start,) = fake.calls_to("chat.startStream")
        assert "recipient_user_id" not in start.args, "no recipient in a DM"
        assert len(fake.calls_to("chat.appendStream")) >= 1
        assert len(fake.calls_to("chat.stopStream")) == 1
        assert fake.calls_to("chat.postMessage") == [] and fake.calls_to("chat.update") == []


async def test_a_workspace_that_refuses_streaming_gets_updates_and_is_not_asked_again(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with FakeSlack() as fake, slack_genbot(fake, sim, tmp_path / "g.db") as bot:
        fake.streaming_refused[fake.team_id] = "feature_not_enabled"
        first = await ask(fake, bot.url, f"echo: {ANSWER}")
        answer = await fake.wait_for(lambda: done(fake, "C1", ANSWER), WAIT)
        second = await ask(fake, bot.url, "echo: and again", channel="C2")
        again = await fake.wait_for(lambda: done(fake, "C2", "and again"), WAIT)

    assert answer.thread_ts == first.ts and again.thread_ts == second.ts
    assert [c.error for c in fake.calls_to("chat.startStream")] == ["feature_not_enabled"]
    assert fake.calls_to("chat.postMessage") and fake.calls_to("chat.update")
    assert any(MARKER in earlier for earlier in answer.history), "posted, then updated"
    assert fake.ratelimited == []


async def test_a_stream_past_slacks_window_is_finished_with_an_update(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with (
        FakeSlack(stream_window_seconds=0.3) as fake,
        slack_genbot(fake, sim, tmp_path / "g.db") as bot,
    ):
        question = await ask(fake, bot.url, f"echo: {ANSWER}")
        answer = await fake.wait_for(lambda: done(fake, "C1", ANSWER), WAIT)
        next_question = await ask(fake, bot.url, "echo: short one")
        short = await fake.wait_for(lambda: done(fake, "C1", "short one"), WAIT)

    assert answer.thread_ts == question.ts and short.thread_ts == next_question.ts
    refused = [c for c in fake.calls if c.error == "message_not_in_streaming_state"]
    assert refused and refused[0].args["ts"] == answer.ts
    updates = fake.calls_to("chat.update")
    assert updates and {c.args["ts"] for c in updates} == {answer.ts}, "same message"
    assert len(fake.calls_to("chat.startStream")) == 2, "the next answer streams again"
    assert [m for m in fake.bot_messages("C1") if m.ts not in (answer.ts, short.ts)] == []


async def test_answers_past_a_tight_start_tier_wait_for_it_instead_of_being_refused(
    sim: RunningSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pacing, "WORKSPACE_WINDOW_SECONDS", TIER_WINDOW)
    monkeypatch.setattr(slack_streaming, "TIER_WINDOW_SECONDS", TIER_WINDOW)
    tiers = {**DEFAULT_TIERS, "chat.startStream": 2}
    channels = ("C1", "C2", "C3")
    async with (
        FakeSlack(tier_per_minute=tiers) as fake,
        slack_genbot(fake, sim, tmp_path / "g.db") as bot,
    ):
        surface = bot.adapter.surface
        per_method = {**surface.profile.writes_per_minute_per_workspace, "stream_start": 2}
        surface.profile = replace(surface.profile, writes_per_minute_per_workspace=per_method)
        for channel in channels:
            await ask(fake, bot.url, f"echo: answer in {channel}", channel=channel)
        answers = [
            await fake.wait_for(partial(done, fake, c, f"answer in {c}"), WAIT) for c in channels
        ]

    assert fake.ratelimited == []
    assert [c.ok for c in fake.calls_to("chat.startStream")] == [True] * 3
    first, _, third = sorted(answer.stream_started for answer in answers)
    assert third - first >= TIER_WINDOW, "the third start waited for the tier's window"
