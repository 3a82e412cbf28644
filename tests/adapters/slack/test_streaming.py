"""The core's stream renderer on the Slack surface: natively streamed within the fake's
enforced budgets, and posted and updated where Slack does not stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import SlackSurface
from adapters.slack.settings import SlackSettings
from bot.features.chat.renderer import MARKER, StreamEnd
from bot.kernel import Command, Place, User
from bot.outbox.pacing import Pacer
from tests.adapters.slack.test_surface import surface_for
from tests.bot.features.chat.rendering import render_stream
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_streaming import DEFAULT_TIERS

THREAD = Place("slack", "T0FAKE", "C1", "1700000000.000001")


async def deltas(pieces: list[str], pause: float) -> AsyncIterator[str | StreamEnd]:
    for piece in pieces:
        yield piece
        await asyncio.sleep(pause)
    yield StreamEnd("stop")


async def test_a_streamed_answer_is_edited_within_budget_and_ends_exact() -> None:
    settings = SlackSettings(message_updates_per_second=4.0)
    async with FakeSlack(min_seconds_between_updates=0.25) as fake:
        surface = surface_for(fake, settings)
        words = [f"word{i} " for i in range(40)]

        result = await render_stream(deltas(words, 0.03), surface, THREAD, Pacer())

        assert result.landed and fake.ratelimited == []
        (message,) = fake.bot_messages("C1")
        assert message.thread_ts == THREAD.thread_id
        assert message.markdown == "".join(words).rstrip()
        assert message.history, "the first version was edited"
        for earlier in message.history:
            assert message.markdown.startswith(earlier.removesuffix(MARKER).rstrip())
        await surface.close()


async def test_a_long_answer_continues_in_new_thread_messages() -> None:
    settings = SlackSettings(message_updates_per_second=4.0)
    async with FakeSlack(min_seconds_between_updates=0.25) as fake:
        surface = surface_for(fake, settings)
        paragraph = "All work and no play makes a dull fox. " * 50 + "\n\n"
        pieces = [paragraph] * 14

        result = await render_stream(deltas(pieces, 0.01), surface, THREAD, Pacer())

        assert result.landed and fake.ratelimited == []
        messages = fake.bot_messages("C1")
        assert len(messages) == len(result.messages) >= 2
        assert all(len(m.markdown) <= 12000 for m in messages)
        assert {m.thread_ts for m in messages} == {THREAD.thread_id}
        assert "".join(m.markdown for m in messages).split() == "".join(pieces).split()
        await surface.close()


async def test_a_long_native_answer_continues_in_new_streams_within_slacks_limits() -> None:
    async with FakeSlack() as fake:
        surface = surface_for(fake)
        paragraph = "The quick brown fox jumps over the lazy dog, again and again. " * 40 + "\n\n"
        pieces = [paragraph[i : i + 500] for i in range(0, len(paragraph), 500)] * 12
        thread = THREAD.in_thread(fake.user_says("/chat", channel="C1").ts)
        origin = Command(user=User("U1"), place=thread, name="chat")

        result = await render_stream(deltas(pieces, 0.0), surface, thread, Pacer(), origin=origin)

        assert result.landed and len(result.messages) >= 3
        assert result.streamed == 1, "continuations complete at once are posted whole"
        messages = fake.bot_messages("C1")
        assert [m.ts for m in messages] == [r.message_id for r in result.messages]
        assert all(len(m.markdown) <= 12000 and not m.streaming for m in messages)
        assert "".join(m.markdown for m in messages) == "".join(pieces).rstrip()
        assert [c for c in fake.calls if not c.ok] == []
        await surface.close()


async def test_a_ping_split_across_pieces_is_never_streamed() -> None:
    async with FakeSlack() as fake:
        surface = surface_for(fake)
        pieces = ["Tell @her", "e and <!ev", "eryone> and &lt;", "!channel&gt; hi"]
        origin = Command(user=User("U1"), place=THREAD, name="chat")

        result = await render_stream(deltas(pieces, 0.3), surface, THREAD, Pacer(), origin=origin)

        assert result.landed
        (message,) = fake.bot_messages("C1")
        assert message.pings() == set()
        for earlier in message.history:
            probe = replace(message, blocks=[{"type": "markdown", "text": earlier}])
            assert probe.pings() == set(), earlier
        assert message.markdown.replace("\u200b", "") == "".join(pieces)
        await surface.close()


def test_the_surface_budgets_each_streaming_method_by_slacks_tier() -> None:
    profile = SlackSurface(
        AsyncWebClient(token="x"),
        profile=SlackSettings().platform_profile(),
        bot_token="x",
        api_url="http://x/",
    ).profile
    tiers = profile.writes_per_minute_per_workspace
    assert tiers["stream_start"] == DEFAULT_TIERS["chat.startStream"]
    assert tiers["stream_append"] == DEFAULT_TIERS["chat.appendStream"]
    assert tiers["stream_stop"] == DEFAULT_TIERS["chat.stopStream"]
    assert tiers["send"] is None and profile.edits_per_minute_per_workspace == 50
