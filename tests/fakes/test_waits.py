"""The fakes' ``wait_for`` sees a condition over another peer's state (the simulator's
requests) even when the fake itself serves no call after it turns true."""

from __future__ import annotations

import asyncio

from tests.fakes.discord_world import DiscordWorld
from tests.fakes.platform import FakePlatform
from tests.fakes.slack import FakeSlack

BOUND = 2.0


async def turns_true_later(state: list[str]) -> None:
    await asyncio.sleep(0.1)
    state.append("created")


async def test_fake_slack_wait_for_sees_state_it_is_not_told_of() -> None:
    fake, state = FakeSlack(), list[str]()
    later = asyncio.create_task(turns_true_later(state))
    assert await fake.wait_for(lambda: state or None, BOUND) == ["created"]
    await later


async def test_fake_discord_wait_for_sees_state_it_is_not_told_of() -> None:
    world, state = DiscordWorld(), list[str]()
    later = asyncio.create_task(turns_true_later(state))
    assert await world.wait_for(lambda: state or None, BOUND) == ["created"]
    await later


async def test_fake_platform_wait_for_sees_state_it_is_not_told_of() -> None:
    platform, state = FakePlatform(), list[str]()
    later = asyncio.create_task(turns_true_later(state))
    assert await platform.wait_for(lambda: state or None, BOUND) == ["created"]
    await later
