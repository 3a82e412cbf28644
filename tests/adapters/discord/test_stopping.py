"""While genbot stops, a slash command reaches no core: the user is told, privately, that genbot
is restarting (the router's refusal through Discord's interaction answer)."""

from __future__ import annotations

from bot.kernel import RESTARTING_TEXT
from tests.adapters.discord.harness import Harness, RecordingCore


async def test_after_intake_stops_a_slash_command_is_answered_restarting_privately(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    [adapter] = bot.adapters
    adapter.intake.stop()
    alice = fake.user("alice")
    await fake.slash(alice, fake.channel("general"), "usage")

    shown = await fake.wait_for(lambda: fake.ephemerals_for(alice), what="the refusal")
    assert [message.content for message in shown] == [RESTARTING_TEXT]
    assert await adapter.intake.drain(5) == 0
    assert core.events == []


async def test_connected_follows_the_gateway(bot: Harness) -> None:
    [adapter] = bot.adapters
    assert await adapter.connected()
    await bot.stop(adapter)
    assert not await adapter.connected()
