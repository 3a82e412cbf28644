"""The core's stream renderer on the Slack surface: within the fake's enforced budget."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from bot.budget import RenderBudget
from bot.config import LimitsSettings
from bot.events import Place
from bot.render import MARKER, StreamEnd, render_stream
from tests.adapters.slack.test_surface import surface_for
from tests.fakes.slack import FakeSlack

THREAD = Place("slack", "T0FAKE", "C1", "1700000000.000001")


async def deltas(pieces: list[str], pause: float) -> AsyncIterator[str | StreamEnd]:
    for piece in pieces:
        yield piece
        await asyncio.sleep(pause)
    yield StreamEnd("stop")


async def test_a_streamed_answer_is_edited_within_budget_and_ends_exact() -> None:
    limits = LimitsSettings(slack_message_updates_per_second=4.0)
    async with FakeSlack(min_seconds_between_updates=0.25) as fake:
        surface = surface_for(fake, limits)
        words = [f"word{i} " for i in range(40)]

        result = await render_stream(deltas(words, 0.03), surface, THREAD, RenderBudget())

        assert result.landed and fake.ratelimited == []
        (message,) = fake.bot_messages("C1")
        assert message.thread_ts == THREAD.thread_id
        assert message.markdown == "".join(words).rstrip()
        assert message.history, "the first version was edited"
        for earlier in message.history:
            assert message.markdown.startswith(earlier.removesuffix(MARKER).rstrip())
        await surface.close()


async def test_a_long_answer_continues_in_new_thread_messages() -> None:
    limits = LimitsSettings(slack_message_updates_per_second=4.0)
    async with FakeSlack(min_seconds_between_updates=0.25) as fake:
        surface = surface_for(fake, limits)
        paragraph = "All work and no play makes a dull fox. " * 50 + "\n\n"
        pieces = [paragraph] * 14

        result = await render_stream(deltas(pieces, 0.01), surface, THREAD, RenderBudget())

        assert result.landed and fake.ratelimited == []
        messages = fake.bot_messages("C1")
        assert len(messages) == len(result.messages) >= 2
        assert all(len(m.markdown) <= 12000 for m in messages)
        assert {m.thread_ts for m in messages} == {THREAD.thread_id}
        assert "".join(m.markdown for m in messages).split() == "".join(pieces).split()
        await surface.close()
