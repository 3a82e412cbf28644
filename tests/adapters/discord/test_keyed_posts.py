"""Keyed messages (job results and failure reports) reach a Discord channel once, however often
the core sends them: the surface posts them with a nonce Discord enforces."""

from __future__ import annotations

import discord
import pytest

from adapters.discord.surface import message_nonce
from bot.kernel import ImageFile, OutMessage, Place
from tests.adapters.discord.harness import Harness
from tests.fakes.discord import FakeDiscord


def general(fake: FakeDiscord) -> Place:
    return Place("discord", str(fake.guild_id), str(fake.channel("general").id))


async def test_a_keyed_message_sent_twice_is_posted_once(bot: Harness) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    result = OutMessage("**a fox**", key="0123456789ab.result")
    first = await surface.send(general(fake), result)
    again = await surface.send(
        general(fake), OutMessage("**a fox**", key="0123456789ab.result", may_exist=True)
    )
    assert again == first
    assert [m.id for m in fake.bot_messages(fake.channel("general").id)] == [int(first.message_id)]
    posts = fake.requests_to("POST", r"/channels/\d+/messages")
    assert len(posts) == 2
    assert all(p.json["enforce_nonce"] is True for p in posts)
    assert {p.json["nonce"] for p in posts} == {message_nonce("0123456789ab.result")}


async def test_different_keys_post_different_messages(bot: Harness) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    result = await surface.send(general(fake), OutMessage("done", key="0123456789ab.result"))
    failure = await surface.send(general(fake), OutMessage("failed", key="0123456789ab.failure"))
    assert result != failure
    contents = [m.content for m in fake.bot_messages(fake.channel("general").id)]
    assert contents == ["done", "failed"]


async def test_a_keyed_result_with_an_image_is_posted_once(bot: Harness) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    grid = OutMessage("grid", images=(ImageFile("grid.png", b"png"),), key="0123456789ab.result")
    first = await surface.send(general(fake), grid)
    again = await surface.send(general(fake), grid)
    assert again == first
    posted = fake.bot_messages(fake.channel("general").id)
    assert [m.id for m in posted] == [int(first.message_id)]
    assert [a.filename for a in posted[0].attachments] == ["grid.png"]
    assert all(p.files for p in fake.requests_to("POST", r"/channels/\d+/messages"))


async def test_unkeyed_messages_are_never_deduplicated(bot: Harness) -> None:
    """discord.py gives every unkeyed send a random nonce of its own."""
    fake, surface = bot.fake, bot.adapters[0].surface
    await surface.send(general(fake), OutMessage("hello"))
    await surface.send(general(fake), OutMessage("hello"))
    assert len(fake.bot_messages(fake.channel("general").id)) == 2
    nonces = {p.json["nonce"] for p in fake.requests_to("POST", r"/channels/\d+/messages")}
    assert len(nonces) == 2


async def test_a_repeat_after_discords_nonce_window_posts_again(bot: Harness) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    fake.nonce_window = 0.0
    result = OutMessage("done", key="0123456789ab.result")
    first = await surface.send(general(fake), result)
    again = await surface.send(general(fake), result)
    assert again != first
    assert len(fake.bot_messages(fake.channel("general").id)) == 2


def test_nonces_are_short_and_stable() -> None:
    nonce = message_nonce("0123456789ab.result")
    assert len(nonce) <= 25 and nonce == message_nonce("0123456789ab.result")
    assert nonce != message_nonce("0123456789ab.failure")


async def test_the_fake_refuses_nonces_longer_than_discord_allows(bot: Harness) -> None:
    fake = bot.fake
    channel = bot.adapters[0].surface.client.get_partial_messageable(
        fake.channel("general").id, guild_id=fake.guild_id
    )
    with pytest.raises(discord.HTTPException) as refused:
        await channel.send("hi", nonce="x" * 26)
    assert refused.value.status == 400 and refused.value.code == 50035
    sent = await channel.send("hi", nonce="x" * 25)
    assert sent.nonce == "x" * 25
