"""The Slack surface's status line against the fake Slack (the real slack-sdk client)."""

from __future__ import annotations

import asyncio

import pytest

from adapters.slack import activity as status_line
from bot.kernel import OutMessage, Place
from tests.adapters.slack.test_surface import surface_for
from tests.fakes.slack import FakeSlack


async def test_a_status_is_set_again_before_slack_drops_it_until_genbot_posts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(status_line, "REFRESH_SECONDS", 0.05)
    async with FakeSlack() as fake:
        root = fake.user_says("a question")
        surface = surface_for(fake)
        place = Place("slack", fake.team_id, "C1", root.ts)

        await surface.show_activity(place, "drawing")
        await fake.wait_for(lambda: len(fake.status_log) >= 3 or None)
        await surface.send(place, OutMessage(text="the grid"))
        refreshed = len(fake.status_log)
        await asyncio.sleep(0.2)
        await surface.end_activity(place, "drawing")

        assert {s.status for s in fake.status_log} == {"is drawing…"}
        assert len(fake.status_log) == refreshed, "no refresh after genbot posted"
        assert fake.statuses == {}
        await surface.close()


async def test_a_status_refused_by_slack_is_only_logged() -> None:
    async with FakeSlack() as fake:
        surface = surface_for(fake)
        place = Place("slack", fake.team_id, "C1", "1.000001")

        await surface.show_activity(place, "thinking")
        await surface.end_activity(place, "thinking")

        assert [c.error for c in fake.calls_to("assistant.threads.setStatus")] == [
            "invalid_thread_ts"
        ]
        await surface.close()
