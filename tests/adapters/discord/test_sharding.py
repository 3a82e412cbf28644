"""Shards: one process runs every shard Discord recommends; several processes split them with
[discord] shard_count and shard_ids; DMs arrive on shard 0 only, a guild's events on its shard."""

from __future__ import annotations

import pytest

from adapters.discord.settings import DiscordSettings
from bot.kernel import UserMessage
from tests.adapters.discord.harness import Harness, RecordingCore
from tests.fakes.discord import FakeDiscord


def guild_shard(fake: FakeDiscord, count: int) -> int:
    return (fake.guild_id >> 22) % count


@pytest.mark.parametrize("fake", [{"recommended_shards": 2}], indirect=True)
async def test_one_process_runs_every_recommended_shard(harness: Harness) -> None:
    core = RecordingCore()
    adapter = await harness.start(core)
    fake = harness.fake
    assert sorted(tuple(i["shard"]) for i in fake.identifies) == [(0, 2), (1, 2)]
    assert await adapter.connected()
    alice = fake.user("alice")
    await fake.user_message(alice, fake.dm_channel(alice), "hello")
    assert (await core.next_event(UserMessage)).text == "hello"
    await fake.user_message(fake.user("bob"), fake.channel("general"), f"{fake.bot.mention} hi")
    assert (await core.next_event(UserMessage)).text == "hi"


async def test_two_processes_split_the_shards_and_dms_go_to_shard_0(harness: Harness) -> None:
    fake = harness.fake
    cores = [RecordingCore(), RecordingCore()]
    for shard, core in enumerate(cores):
        await harness.start(core, shard_count=2, shard_ids=[shard])
    assert sorted(tuple(i["shard"]) for i in fake.identifies) == [(0, 2), (1, 2)]

    alice = fake.user("alice")
    await fake.user_message(alice, fake.dm_channel(alice), "a DM")
    assert (await cores[0].next_event(UserMessage)).text == "a DM"
    mention = f"{fake.bot.mention} in the guild"
    await fake.user_message(fake.user("bob"), fake.channel("general"), mention)
    owner = cores[guild_shard(fake, 2)]
    assert (await owner.next_event(UserMessage)).text == "in the guild"
    assert [m.text for m in cores[0].messages() + cores[1].messages()] == [
        "a DM",
        "in the guild",
    ]


def test_shard_ids_must_fit_the_shard_count() -> None:
    assert DiscordSettings(shard_count=4, shard_ids=[0, 3]).shards() == "0,3 of 4"
    assert DiscordSettings(shard_count=2).shards() == "0,1 of 2"
    assert DiscordSettings().shards() is None
    for bad in (
        {"shard_ids": [0]},
        {"shard_count": 2, "shard_ids": [2]},
        {"shard_count": 2, "shard_ids": []},
    ):
        with pytest.raises(ValueError, match="shard"):
            DiscordSettings(**bad)
