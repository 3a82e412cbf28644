"""While genbot stops, a slash command reaches no core: Slack's user is told, ephemerally
through the command's response_url, that genbot is restarting."""

from __future__ import annotations

from adapters.slack import SlackAdapter
from bot.kernel import RESTARTING_TEXT
from tests.adapters.slack.conftest import RecordingCore
from tests.fakes.slack import FakeSlack


async def test_after_intake_stops_a_slash_command_is_answered_restarting(
    fake: FakeSlack, adapter: SlackAdapter, url: str, core: RecordingCore
) -> None:
    adapter.intake.stop()
    await fake.post_command(url, fake.slash_command("/imagine", "a lighthouse"))

    (answer,) = await fake.wait_for(lambda: fake.ephemerals)
    assert (answer.text, answer.via) == (RESTARTING_TEXT, "response_url")
    assert await adapter.intake.drain(5) == 0
    assert core.events == []


async def test_connected_while_listening_for_events(adapter: SlackAdapter) -> None:
    assert await adapter.connected()
    await adapter.stop()
    assert not await adapter.connected()
