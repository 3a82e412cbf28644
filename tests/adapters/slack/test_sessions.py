"""The agent session of a thread genbot streams into, on the Slack surface against the fake:
``processing`` from the stream's start (Slack's stop shows), ``active`` once the answer is over,
even when its stream was never stopped (the answer failed)."""

from __future__ import annotations

from bot.kernel import Command, Place, User
from tests.adapters.slack.test_surface import surface_for
from tests.fakes.slack import FakeSlack


async def test_a_failed_answer_leaves_processing_when_it_is_done_thinking() -> None:
    async with FakeSlack() as fake:
        surface = surface_for(fake)
        root = fake.user_says("/chat tell me", channel="C1")
        place = Place("slack", fake.team_id, "C1", root.ts)
        origin = Command(user=User("U1"), place=place, name="chat")

        stream = await surface.start_stream(place, "Once upon", origin=origin)
        assert stream is not None
        assert fake.stop_showing("C1", root.ts)

        await surface.end_activity(place, "thinking", origin=origin)
        assert fake.sessions[("C1", root.ts)] == "active"
        await surface.end_activity(place, "thinking", origin=origin)
        assert [status for *_, status in fake.session_log] == ["processing", "active"]
