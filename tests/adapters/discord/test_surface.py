"""The Discord surface: mentions, edits, rate limits and failures, seen from the fake's side."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from adapters.discord.surface import RATE_LIMIT_WAIT_CAP, DiscordSurface
from bot.kernel import (
    Attachment,
    Button,
    Command,
    ImageFile,
    LimitsSettings,
    MessageGone,
    MessageRef,
    OutMessage,
    Place,
    RateLimited,
    SurfaceError,
    User,
    speaking,
)
from tests.adapters.discord.harness import Harness, RecordingCore
from tests.fakes.discord import FakeDiscord
from tests.language import said

MIB = 1024 * 1024


def general(fake: FakeDiscord) -> Place:
    return Place("discord", str(fake.guild_id), str(fake.channel("general").id))


def last_post_payload(fake: FakeDiscord) -> dict[str, object]:
    payload = fake.requests_to("POST", r"/channels/\d+/messages")[-1].json
    assert isinstance(payload, dict)
    return payload


async def test_model_text_pings_nobody(bot: Harness) -> None:
    fake = bot.fake
    text = f"@everyone look {fake.role('moderators').mention} and {fake.user('bob').mention} @here"
    ref = await bot.adapters[0].surface.send(general(fake), OutMessage(text, from_model=True))
    assert last_post_payload(fake)["allowed_mentions"] == {"parse": []}
    message = fake.messages[int(ref.message_id)]
    assert message.content == text and message.pings.nobody
    await bot.adapters[0].surface.edit(ref, OutMessage(text + " again", from_model=True))
    assert message.pings.nobody and message.history == [text]


async def test_genbot_text_may_ping_the_requester_only(bot: Harness) -> None:
    fake = bot.fake
    alice, bob = fake.user("alice"), fake.user("bob")
    moderators = fake.role("moderators").mention
    text = f"{alice.mention} your grid is ready (@everyone {bob.mention} {moderators})"
    out = OutMessage(text, mention_user_id=str(alice.id))
    ref = await bot.adapters[0].surface.send(general(fake), out)
    pings = fake.messages[int(ref.message_id)].pings
    assert pings.users == {alice.id} and not pings.roles and not pings.everyone
    plain = await bot.adapters[0].surface.send(general(fake), OutMessage(f"hi {bob.mention}"))
    assert fake.messages[int(plain.message_id)].pings.nobody


async def test_a_message_addressed_to_the_requester_mentions_them_so_they_are_notified(
    bot: Harness,
) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    alice = fake.user("alice")
    ref = await surface.send(general(fake), OutMessage("**a fox**", mention_user_id=str(alice.id)))
    message = fake.messages[int(ref.message_id)]
    assert message.content == f"{alice.mention} **a fox**" and message.pings.users == {alice.id}
    await surface.edit(ref, OutMessage("**a fox** (upscaled)", mention_user_id=str(alice.id)))
    assert message.content == f"{alice.mention} **a fox** (upscaled)"
    long = await surface.send(general(fake), OutMessage("x" * 2000, mention_user_id=str(alice.id)))
    assert len(fake.messages[int(long.message_id)].content) == 2000
    model = OutMessage("the model speaks", from_model=True, mention_user_id=str(alice.id))
    quiet = await surface.send(general(fake), model)
    assert fake.messages[int(quiet.message_id)].content == "the model speaks"
    assert fake.messages[int(quiet.message_id)].pings.nobody


async def test_a_notice_genbot_makes_itself_goes_to_the_users_dms_else_in_place(
    bot: Harness,
) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    alice = fake.user("alice")
    queued = Command(user=User(str(alice.id)), place=general(fake), name="imagine")
    await surface.send_ephemeral(queued, "2 queued jobs of yours did not start.")
    [told] = fake.bot_messages(fake.dm_channel(alice).id)
    assert told.content == "2 queued jobs of yours did not start."
    assert fake.bot_messages(fake.channel("general").id) == []
    stranger = replace(queued, user=User("4242"))
    await surface.send_ephemeral(stranger, "1 queued job of yours did not start.")
    [in_place] = fake.bot_messages(fake.channel("general").id)
    assert in_place.content == "<@4242> 1 queued job of yours did not start."


async def test_edits_replace_text_and_buttons_and_keep_images_unless_given(bot: Harness) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    buttons = ((Button("U1", "upscale1", "j1"),),)
    ref = await surface.send(
        general(fake), OutMessage("0%", images=(ImageFile("p.png", b"one"),), buttons=buttons)
    )
    message = fake.messages[int(ref.message_id)]
    await surface.edit(ref, OutMessage("50%"))
    assert (message.content, message.components) == ("50%", [])
    assert [a.data for a in message.attachments] == [b"one"]
    await surface.edit(
        ref, OutMessage("done", images=(ImageFile("g.png", b"two"),), buttons=buttons)
    )
    assert [(a.filename, a.data) for a in message.attachments] == [("g.png", b"two")]
    assert message.custom_ids == ["gb:upscale1:j1"]
    assert message.history == ["0%", "50%"]


async def test_a_message_is_deleted_and_linked_and_a_deleted_one_is_gone(bot: Harness) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    place = general(fake)
    ref = await surface.send(place, OutMessage("⏳ working"))
    assert await surface.link(ref) == (
        f"https://discord.com/channels/{fake.guild_id}/{place.channel_id}/{ref.message_id}"
    )
    await surface.delete(ref)
    assert fake.messages[int(ref.message_id)].deleted
    with pytest.raises(MessageGone):
        await surface.delete(ref)
    with pytest.raises(MessageGone):
        await surface.edit(ref, OutMessage("done"))


async def test_edits_beyond_the_bucket_are_paced_by_discord_py(bot: Harness) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    fake.bucket_size, fake.bucket_window = 3, 0.3
    ref = await surface.send(general(fake), OutMessage("0"))
    async with asyncio.timeout(5):
        for step in range(1, 8):
            await surface.edit(ref, OutMessage(str(step)))
    assert fake.messages[int(ref.message_id)].content == "7"
    assert fake.rate_limit_hits == 0
    assert len(fake.requests_to("PATCH", r"/channels/\d+/messages/\d+")) == 7


@pytest.mark.parametrize("fake", [{"advertise_rate_limits": False}], indirect=True)
async def test_a_short_429_is_waited_out_and_retried(bot: Harness) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    fake.bucket_size, fake.bucket_window = 2, 0.2
    ref = await surface.send(general(fake), OutMessage("0"))
    async with asyncio.timeout(5):
        for step in range(1, 5):
            await surface.edit(ref, OutMessage(str(step)))
    assert fake.rate_limit_hits >= 1
    assert fake.messages[int(ref.message_id)].content == "4"


@pytest.mark.parametrize("fake", [{"advertise_rate_limits": False}], indirect=True)
async def test_a_long_429_reaches_the_core_as_rate_limited(bot: Harness) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    fake.bucket_size, fake.bucket_window = 2, 60.0
    ref = await surface.send(general(fake), OutMessage("0"))
    await surface.edit(ref, OutMessage("1"))
    async with asyncio.timeout(5):
        with pytest.raises(RateLimited) as raised:
            await surface.edit(ref, OutMessage("2"))
    assert RATE_LIMIT_WAIT_CAP < raised.value.retry_after <= 60.0
    assert fake.rate_limit_hits == 1
    assert fake.messages[int(ref.message_id)].content == "1"


async def test_the_platform_profile_comes_from_settings(
    harness: Harness, core: RecordingCore
) -> None:
    adapter = await harness.start(core, edits_per_window=4, edit_window_seconds=6.0)
    assert adapter.surface.platform == "discord"
    assert adapter.surface.profile.max_text == 2000
    assert adapter.surface.profile.edits_per_window_per_channel == 4
    assert adapter.surface.profile.edit_window_seconds == 6.0


async def test_refusals_become_surface_errors(bot: Harness) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    sent_before = len(fake.requests)
    with pytest.raises(SurfaceError, match="2000"):
        await surface.send(general(fake), OutMessage("x" * 2001))
    with pytest.raises(SurfaceError, match="empty"):
        await surface.send(general(fake), OutMessage(""))
    assert len(fake.requests) == sent_before
    closed = fake.channel("closed")
    fake.forbidden_channels.add(closed.id)
    with pytest.raises(SurfaceError, match="403"):
        await surface.send(Place("discord", str(fake.guild_id), str(closed.id)), OutMessage("hi"))
    with pytest.raises(MessageGone, match="404"):
        await surface.edit(MessageRef(general(fake), "12345"), OutMessage("hi"))
    dm = Place("discord", "dm", str(fake.dm_channel(fake.user("alice")).id), None, True)
    with pytest.raises(SurfaceError):
        await surface.start_thread(MessageRef(dm, "1"), "no threads in DMs")


async def test_downloads_are_bounded_by_the_upload_limit(
    harness: Harness, core: RecordingCore
) -> None:
    fake = harness.fake
    adapter = await harness.start(core, LimitsSettings(max_upload_bytes=10))
    stored = fake.store_attachment(fake.channel("general").id, "big.png", b"x" * 11)
    big = Attachment("big.png", stored.url, "image/png", size=None)
    with pytest.raises(SurfaceError, match="larger than 10 B"):
        await adapter.surface.download(big)
    declared = Attachment("big.png", stored.url, "image/png", size=11)
    fetched = len(fake.requests)
    with pytest.raises(SurfaceError, match="limit is 10 B"):
        await adapter.surface.download(declared)
    assert len(fake.requests) == fetched
    with pytest.raises(SurfaceError):
        await adapter.surface.download(
            Attachment("gone.png", stored.url.replace(str(stored.id), "1"))
        )
    assert await adapter.surface.download(Attachment("inline.png", data=b"abc")) == b"abc"


async def test_a_download_refused_in_german_writes_its_sizes_the_german_way(
    harness: Harness, core: RecordingCore
) -> None:
    adapter = await harness.start(core, LimitsSettings(max_upload_bytes=3 * MIB // 2))
    declared = Attachment("big.png", "https://cdn.example/big.png", "image/png", size=8 * MIB)
    with speaking("de"), pytest.raises(SurfaceError) as refused:
        await adapter.surface.download(declared)
    assert str(refused.value) == said(
        "de",
        "{file} is {size}; the limit is {limit}",
        file="big.png",
        size="8 MiB",
        limit="1,5 MiB",
    )


async def test_job_messages_are_components_v2_cards_and_keep_their_gallery(bot: Harness) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    buttons = ((Button("U1", "upscale1", "j1"), Button("U2", "upscale2", "j1")),)
    ref = await surface.send(general(fake), OutMessage("⏳ working", buttons=buttons, card=True))
    message = fake.messages[int(ref.message_id)]
    assert message.components_v2 and message.content == "" and message.text == "⏳ working"
    [container] = message.components
    assert container["type"] == 17 and message.custom_ids == ["gb:upscale1:j1", "gb:upscale2:j1"]

    done = OutMessage("**Imagined** — a fox", images=(ImageFile("grid.png", b"png"),), card=True)
    await surface.edit(ref, replace(done, buttons=buttons))
    assert message.gallery == ["attachment://grid.png"] and message.text == "**Imagined** — a fox"

    restarted = DiscordSurface(bot.adapters[0].client, surface.profile, 1024)
    marked = ((Button("U1", "upscale1", "j1", "primary"), Button("U2", "upscale2", "j1")),)
    await restarted.edit(ref, OutMessage("**Imagined** — a fox", buttons=marked, card=True))
    assert message.gallery == ["attachment://grid.png"], "an edit without images keeps them"
    assert message.button("U1")["style"] == 1 and [a.data for a in message.attachments] == [b"png"]

    classic = DiscordSurface(bot.adapters[0].client, surface.profile, 1024, result_cards=False)
    plain = await classic.send(general(fake), OutMessage("⏳ working", buttons=buttons, card=True))
    posted = fake.messages[int(plain.message_id)]
    assert not posted.components_v2 and posted.content == "⏳ working" and len(posted.buttons) == 2
