"""Messages → ``UserMessage``: DMs, mentions, threads, replies; and what is ignored."""

from __future__ import annotations

import asyncio

from bot.kernel import OutMessage, Place, UserMessage
from tests.adapters.discord.harness import Harness, RecordingCore
from tests.fakes.discord import FakeChannel, FakeDiscord
from tests.fakes.discord_model import PUBLIC_THREAD, TEXT_CHANNEL, snowflake


def place(fake: FakeDiscord, channel: str) -> Place:
    return Place("discord", str(fake.guild_id), str(fake.channel(channel).id))


async def test_dm_messages_are_turns(bot: Harness, core: RecordingCore) -> None:
    fake = bot.fake
    alice = fake.user("alice")
    dm = fake.dm_channel(alice)
    sent = await fake.user_message(
        alice, dm, "hello there", attachments=(("a.png", b"img", "image/png"),)
    )
    event = await core.next_event(UserMessage)
    assert event.place == Place("discord", "dm", str(dm.id), None, True)
    assert (event.message_id, event.text, event.mentions_bot) == (
        str(sent.id),
        "hello there",
        False,
    )
    assert event.reply_to_message_id is None
    assert event.serial_key == (str(dm.id), None), "one DM's turns are handled in order"
    assert [(a.filename, a.size) for a in event.attachments] == [("a.png", 3)]
    assert await bot.adapters[0].surface.download(event.attachments[0]) == b"img"


async def test_a_mention_in_a_channel_is_a_turn_without_the_mention(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    await fake.user_message(
        fake.user("bob"), fake.channel("general"), f"{fake.bot.mention} what is 2+2?"
    )
    event = await core.next_event(UserMessage)
    assert event.mentions_bot and event.text == "what is 2+2?"
    assert event.place == place(fake, "general")
    assert event.user.id == str(fake.user("bob").id)


async def test_messages_in_a_thread_the_bot_started_continue_it(
    bot: Harness, core: RecordingCore
) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    answer = await surface.send(place(fake, "general"), OutMessage("Thinking about foxes"))
    thread_place = await surface.start_thread(answer, "foxes\nand more")
    assert thread_place.thread_id == answer.message_id
    thread = fake.channels[int(answer.message_id)]
    assert (thread.name, thread.parent_id) == ("foxes and more", fake.channel("general").id)
    await fake.wait_for(
        lambda: bot.adapters[0].client.get_channel(thread.id), what="THREAD_CREATE seen"
    )
    await fake.user_message(fake.user("alice"), thread, "tell me more")
    event = await core.next_event(UserMessage)
    assert event.place == thread_place and not event.mentions_bot
    assert event.serial_key == (thread_place.channel_id, thread_place.thread_id)
    reply = await surface.send(thread_place, OutMessage("More foxes", from_model=True))
    assert fake.messages[int(reply.message_id)].channel_id == thread.id


async def test_replies_to_the_bot_continue_its_chain(bot: Harness, core: RecordingCore) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    answer = await surface.send(place(fake, "random"), OutMessage("an answer", from_model=True))
    bot_message = fake.messages[int(answer.message_id)]
    await fake.user_message(
        fake.user("carol"), fake.channel("random"), "and then?", reply_to=bot_message
    )
    event = await core.next_event(UserMessage)
    assert event.reply_to_message_id == answer.message_id and not event.mentions_bot
    assert event.place == place(fake, "random")


async def test_the_answer_to_a_channel_turn_is_a_reply_that_pings_nobody(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake

    async def answer(event: UserMessage) -> None:
        assert core.surface is not None
        await core.surface.send(event.place, OutMessage("4", from_model=True), origin=event)

    core.on["message"] = answer
    asked = await fake.user_message(
        fake.user("bob"), fake.channel("general"), f"{fake.bot.mention} 2+2?"
    )
    reply = await fake.wait_for(
        lambda: fake.bot_messages(fake.channel("general").id), what="the answer"
    )
    assert reply[0].referenced is asked
    assert reply[0].pings.nobody


async def test_other_traffic_is_ignored(bot: Harness, core: RecordingCore) -> None:
    fake = bot.fake
    general = fake.channel("general")
    alice, bob = fake.user("alice"), fake.user("bob")
    other = await fake.user_message(bob, general, "just chatting")
    await fake.user_message(alice, general, "replying to bob", reply_to=other)
    await fake.user_message(fake.bot, general, f"{fake.bot.mention} my own message")
    await fake.user_message(alice, general, f"<@{bob.id}> not the bot")
    marker = await fake.user_message(alice, fake.dm_channel(alice), "marker")
    event = await core.next_event(UserMessage)
    assert event.message_id == str(marker.id)
    assert len(core.messages()) == 1


async def test_only_allowed_channels_are_heard_and_open_ones_need_a_mention_too(
    harness: Harness, core: RecordingCore
) -> None:
    fake = harness.fake
    general, random, closed = (fake.channel(n) for n in ("general", "random", "closed"))
    await harness.start(
        core, allowed_channel_ids=[general.id, random.id], open_channel_ids=[random.id]
    )
    alice = fake.user("alice")
    await fake.user_message(alice, closed, f"{fake.bot.mention} hello?")
    await fake.user_message(alice, random, "open only means anyone may press buttons")
    await fake.user_message(alice, random, f"{fake.bot.mention} in the open channel")
    event = await core.next_event(UserMessage)
    assert event.text == "in the open channel" and event.place.channel_id == str(random.id)
    await fake.user_message(alice, general, "no mention, not open")
    await fake.user_message(alice, fake.dm_channel(alice), "dm")
    assert (await core.next_event(UserMessage)).text == "dm"
    assert [m.text for m in core.messages()] == ["in the open channel", "dm"]


async def test_channel_chatter_costs_no_rest_call(bot: Harness, core: RecordingCore) -> None:
    fake = bot.fake
    alice, lounge = fake.user("alice"), fake.channel("lounge")
    before = len(fake.requests)
    await fake.user_message(alice, fake.channel("general"), "just chatting")
    await fake.user_message(alice, lounge, "chatting in the voice channel's text chat")
    await fake.user_message(alice, lounge, f"{fake.bot.mention} hello from the lounge")
    event = await core.next_event(UserMessage)
    assert event.text == "hello from the lounge"
    assert event.place == place(fake, "lounge")
    marker = await fake.user_message(alice, fake.dm_channel(alice), "marker")
    assert (await core.next_event(UserMessage)).message_id == str(marker.id)
    assert len(core.messages()) == 2
    assert fake.requests[before:] == []


async def test_a_conversation_in_a_users_thread_continues_without_mentions(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    alice = fake.user("alice")
    thread = await fake.user_thread(alice, fake.channel("general"), "alice's thread")
    await fake.user_message(alice, thread, f"{fake.bot.mention} let's talk here")
    started = await core.next_event(UserMessage)
    assert started.mentions_bot and started.text == "let's talk here"
    assert started.place == place(fake, "general").in_thread(str(thread.id))
    await fake.user_message(alice, thread, "and a follow-up without a mention")
    follow_up = await core.next_event(UserMessage)
    assert not follow_up.mentions_bot and follow_up.text == "and a follow-up without a mention"
    assert follow_up.place == started.place
    await fake.user_message(fake.bot, thread, "genbot's own message")
    marker = await fake.user_message(alice, fake.dm_channel(alice), "marker")
    assert (await core.next_event(UserMessage)).message_id == str(marker.id)
    assert len(core.messages()) == 3
    assert not fake.requests_to("GET", rf"/channels/{thread.id}")


async def test_typing_shows_in_the_place(bot: Harness) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    await surface.typing(place(fake, "general"))
    dm = fake.dm_channel(fake.user("alice"))
    await surface.typing(Place("discord", "dm", str(dm.id), None, True))
    assert fake.typing_in == [fake.channel("general").id, dm.id]
    await surface.typing(Place("discord", "dm", "123", None, True))
    assert len(fake.typing_in) == 2


async def test_private_text_for_a_message_is_a_quiet_reply(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake

    async def refuse(event: UserMessage) -> None:
        assert core.surface is not None
        await core.surface.send_ephemeral(event, "That model cannot see images.")

    core.on["message"] = refuse
    general = fake.channel("general")
    asked = await fake.user_message(fake.user("bob"), general, f"{fake.bot.mention} look @everyone")
    reply = await fake.wait_for(lambda: fake.bot_messages(general.id), what="the reply")
    assert reply[0].content == "That model cannot see images."
    assert reply[0].referenced is asked and reply[0].pings.nobody


async def test_a_channel_missing_from_the_cache_is_looked_up_once(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    general, alice = fake.channel("general"), fake.user("alice")
    thread = FakeChannel(
        snowflake(), PUBLIC_THREAD, "older thread", fake.guild_id, general.id, fake.bot.id
    )
    unknown = FakeChannel(snowflake(), TEXT_CHANNEL, "unseen", fake.guild_id)
    fake.channels |= {thread.id: thread, unknown.id: unknown}
    await fake.user_message(alice, thread, "still there?")
    event = await core.next_event(UserMessage)
    assert event.place == place(fake, "general").in_thread(str(thread.id))
    await fake.user_message(alice, thread, "hello?")
    assert (await core.next_event(UserMessage)).text == "hello?"
    await fake.user_message(alice, unknown, "chatter in a channel genbot has not cached")
    await fake.user_message(alice, unknown, "more chatter")
    await fake.user_message(alice, unknown, f"{fake.bot.mention} now for you")
    assert (await core.next_event(UserMessage)).place == Place(
        "discord", str(fake.guild_id), str(unknown.id)
    )
    assert len(core.messages()) == 3
    assert len(fake.requests_to("GET", rf"/channels/{thread.id}")) == 1
    assert len(fake.requests_to("GET", rf"/channels/{unknown.id}")) == 1


async def test_a_notice_survives_the_user_deleting_their_message(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake

    async def refuse_after_deletion(event: UserMessage) -> None:
        assert core.surface is not None
        await fake.user_deletes(fake.messages[int(event.message_id)])
        await core.surface.send_ephemeral(event, "That model cannot see images.")

    core.on["message"] = refuse_after_deletion
    general = fake.channel("general")
    await fake.user_message(fake.user("bob"), general, f"{fake.bot.mention} look")
    notice = await fake.wait_for(lambda: fake.bot_messages(general.id), what="the notice")
    assert notice[0].content == "That model cannot see images."
    assert notice[0].referenced is None and notice[0].pings.nobody
    refused = [r for r in fake.requests_to("POST", rf"/channels/{general.id}/messages")]
    assert [r.status for r in refused] == [200]


async def test_turns_of_one_conversation_reach_the_core_one_at_a_time(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    release = asyncio.Event()

    async def slow_first(event: UserMessage) -> None:
        if event.text == "first":
            await release.wait()

    core.on["message"] = slow_first
    alice, bob = fake.user("alice"), fake.user("bob")
    await fake.user_message(alice, fake.dm_channel(alice), "first")
    await fake.user_message(alice, fake.dm_channel(alice), "second")
    await fake.user_message(bob, fake.dm_channel(bob), "elsewhere")
    await core.next_event(UserMessage)
    assert (await core.next_event(UserMessage)).text == "elsewhere"
    assert [m.text for m in core.messages()] == ["first", "elsewhere"]
    release.set()
    assert (await core.next_event(UserMessage)).text == "second"


async def test_a_message_carries_the_guilds_language_and_the_users_last_known_one(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    bob, general = fake.user("bob"), fake.channel("general")
    await fake.user_message(bob, general, f"{fake.bot.mention} hi")
    event = await core.next_event(UserMessage)
    assert (event.locale, event.place_locale) == (None, "en-US")
    bob.locale = "ja"
    await fake.slash(bob, general, "help")
    await fake.user_message(bob, fake.dm_channel(bob), "hello")
    event = await core.next_event(UserMessage)
    assert (event.locale, event.place_locale) == ("ja", None)
