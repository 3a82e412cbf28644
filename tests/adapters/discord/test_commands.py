"""Slash commands → ``Command`` events: typed options, attachments, user, place, deferral."""

from __future__ import annotations

from typing import Any

import pytest

from bot.kernel import COMMANDS, Command, Option, OutMessage
from tests.adapters.discord.harness import Harness, RecordingCore
from tests.fakes.discord import EPHEMERAL, FakeDiscord, Upload


def sample(option: Option) -> Any:
    if option.type == "string":
        return option.choices[-1] if option.choices else f"{option.name} text"
    if option.type == "integer":
        return int(option.max_value or option.min_value or 7)
    if option.type == "number":
        low, high = option.min_value or 0.0, option.max_value or 1.0
        return (low + high) / 2 + 0.25
    if option.type == "boolean":
        return True
    return (f"{option.name}.png", f"bytes of {option.name}".encode(), "image/png")


async def test_every_command_becomes_a_typed_command_event_after_deferral(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    alice, general = fake.user("alice"), fake.channel("general")
    for spec in COMMANDS:
        values = {o.name: sample(o) for o in spec.options if o.type != "attachment"}
        uploads: dict[str, Upload] = {
            o.name: sample(o) for o in spec.options if o.type == "attachment"
        }
        interaction = await fake.slash(
            alice, general, spec.name.replace(".", " "), values, attachments=uploads
        )
        event = await core.next_event(Command)
        assert event.name == spec.name
        assert dict(event.options) == values
        for option, value in event.options.items():
            assert type(value) is type(values[option]), option
        assert set(event.attachments) == set(uploads)
        for name, attachment in event.attachments.items():
            filename, data, content_type = uploads[name]
            assert (attachment.filename, attachment.size) == (filename, len(data))
            assert attachment.content_type == content_type
            assert await bot.adapters[0].surface.download(attachment) == data
        assert core.seen_answered[-1], f"/{spec.name} reached the core before it was deferred"
        assert interaction.response_type == 5
        assert interaction.callbacks[0]["data"]["flags"] & EPHEMERAL
        assert event.user.id == str(alice.id) and event.user.name == "Alice"
        assert event.place.platform == "discord"
        assert event.place.workspace_id == str(fake.guild_id)
        assert event.place.channel_id == str(general.id)
        assert (event.place.thread_id, event.place.is_dm) == (None, False)


async def test_admins_are_marked_and_dms_have_the_dm_place(
    harness: Harness, core: RecordingCore
) -> None:
    fake = harness.fake
    alice, bob = fake.user("alice"), fake.user("bob")
    await harness.start(core, guild_ids=[], admin_ids=[bob.id])
    await fake.slash(bob, fake.channel("general"), "usage")
    assert (await core.next_event(Command)).user.is_admin
    await fake.slash(alice, fake.dm_channel(alice), "help")
    event = await core.next_event(Command)
    assert not event.user.is_admin
    assert event.place.is_dm and event.place.workspace_id == "dm"
    assert event.place.channel_id == str(fake.dm_channel(alice).id)


async def test_a_command_in_a_thread_carries_the_thread(bot: Harness, core: RecordingCore) -> None:
    fake, surface = bot.fake, bot.adapters[0].surface
    general = fake.channel("general")
    posted = await surface.send(place_of(fake, general.id), OutMessage(text="topic"))
    thread_place = await surface.start_thread(posted, "a thread")
    thread = fake.channels[int(thread_place.thread_id or 0)]
    await fake.slash(fake.user("alice"), thread, "usage")
    event = await core.next_event(Command)
    assert event.place == thread_place


async def test_commands_outside_allowed_channels_get_an_ephemeral_explanation(
    harness: Harness, core: RecordingCore
) -> None:
    fake = harness.fake
    general, closed = fake.channel("general"), fake.channel("closed")
    await harness.start(core, allowed_channel_ids=[general.id])
    interaction = await fake.slash(fake.user("alice"), closed, "imagine", {"prompt": "a fox"})
    assert await fake.answered(interaction) == 4
    data = interaction.callbacks[0]["data"]
    assert data["flags"] & EPHEMERAL
    assert f"<#{general.id}>" in data["content"]
    await fake.slash(fake.user("alice"), general, "help")
    assert (await core.next_event(Command)).name == "help"
    assert [e.name for e in core.events if isinstance(e, Command)] == ["help"]


async def test_an_ephemeral_answer_replaces_the_thinking_placeholder(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    alice = fake.user("alice")

    async def refuse(event: Command) -> None:
        assert core.surface is not None
        await core.surface.send_ephemeral(event, "width must be at most 1024")

    core.on["diffusion.txt2img"] = refuse
    interaction = await fake.slash(
        alice, fake.channel("general"), "diffusion txt2img", {"prompt": "x", "width": 2048}
    )
    shown = await fake.wait_for(lambda: fake.ephemerals_for(alice), what="the refusal")
    assert [m.content for m in shown] == ["width must be at most 1024"]
    assert shown[0].id == interaction.original_message_id and not shown[0].loading
    assert fake.bot_messages(fake.channel("general").id) == []


async def test_a_public_answer_removes_the_placeholder(bot: Harness, core: RecordingCore) -> None:
    fake = bot.fake
    general = fake.channel("general")

    async def answer(event: Command) -> None:
        assert core.surface is not None
        await core.surface.send(event.place, OutMessage(text="here it is"), origin=event)

    core.on["help"] = answer
    interaction = await fake.slash(fake.user("alice"), general, "help")
    await fake.wait_for(lambda: fake.bot_messages(general.id), what="the answer")
    placeholder = fake.messages[interaction.original_message_id or 0]
    await fake.wait_for(lambda: placeholder.deleted, what="the placeholder removed")
    assert [m.content for m in fake.bot_messages(general.id)] == ["here it is"]


@pytest.mark.parametrize("fake", [{}], indirect=True)
async def test_a_failing_core_is_reported_and_the_user_told_privately(
    fake: FakeDiscord, core: RecordingCore, caplog: pytest.LogCaptureFixture
) -> None:
    errors: list[tuple[str, BaseException]] = []
    harness = Harness(fake, errors)
    await harness.start(core)

    async def crash(event: Command) -> None:
        raise RuntimeError("core bug")

    core.on["usage"] = crash
    alice = fake.user("alice")
    await fake.slash(alice, fake.channel("general"), "usage")
    shown = await fake.wait_for(lambda: fake.ephemerals_for(alice), what="the apology")
    await harness.stop_all()
    assert len(shown) == 1
    assert shown[0].content.startswith("Something went wrong on genbot's side (ref ")
    reference = shown[0].content.split("(ref ")[1].split(")")[0]
    [logged] = [r for r in caplog.records if reference in r.getMessage()]
    assert logged.name == "bot.router" and logged.exc_info is not None
    assert str(logged.exc_info[1]) == "core bug"
    assert errors == [], "the core's failure is the router's to report, not the adapter's"


def place_of(fake: FakeDiscord, channel_id: int) -> Any:
    from bot.kernel import Place

    return Place("discord", str(fake.guild_id), str(channel_id))


@pytest.mark.parametrize("fake", [{"bucket_window": 1.0}], indirect=True)
async def test_a_streamed_chat_answer_lands_in_a_thread_within_the_bucket(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    general = fake.channel("general")
    words = ["Foxes", "are", "small", "mammals."]

    async def chat(event: Command) -> None:
        surface, prompt = core.surface, event.options["prompt"]
        assert surface is not None
        asked = await surface.send(
            event.place,
            OutMessage(
                f"<@{event.user.id}> asked: {event.options['prompt']}",
                mention_user_id=event.user.id,
            ),
            origin=event,
        )
        thread = await surface.start_thread(asked, str(prompt))
        await surface.typing(thread)
        answer = await surface.send(thread, OutMessage("…", from_model=True))
        for count in range(1, len(words) + 1):
            await surface.edit(answer, OutMessage(" ".join(words[:count]), from_model=True))

    core.on["chat"] = chat
    interaction = await fake.slash(
        fake.user("alice"), general, "chat", {"prompt": "what is a fox?"}
    )
    [thread] = await fake.wait_for(lambda: fake.threads_in(general.id), what="the thread")
    final = " ".join(words)
    answer = await fake.wait_for(
        lambda: [m for m in fake.bot_messages(thread.id) if m.content == final], what="the answer"
    )
    assert answer[0].history == ["…", *(" ".join(words[:n]) for n in range(1, len(words)))]
    assert answer[0].pings.nobody
    assert fake.typing_in == [thread.id]
    assert fake.rate_limit_hits == 0
    await fake.wait_for(
        lambda: fake.messages[interaction.original_message_id or 0].deleted, what="no placeholder"
    )


async def test_a_slash_command_carries_its_interaction_as_its_key(
    harness: Harness, core: RecordingCore
) -> None:
    fake = harness.fake
    await harness.start(core)
    interaction = await fake.slash(fake.user("alice"), fake.channel("general"), "help")
    event = await core.next_event(Command)
    assert event.key == f"discord:{interaction.id}"


async def test_a_command_carries_the_users_and_the_guilds_languages(
    harness: Harness, core: RecordingCore
) -> None:
    fake = harness.fake
    fake.guild_locale = "ja"
    await harness.start(core, guild_ids=[])
    alice = fake.user("alice")
    alice.locale = "de"
    await fake.slash(alice, fake.channel("general"), "help")
    event = await core.next_event(Command)
    assert (event.locale, event.place_locale) == ("de", "ja")
    alice.locale = "zh-CN"
    await fake.slash(alice, fake.dm_channel(alice), "help")
    event = await core.next_event(Command)
    assert (event.locale, event.place_locale) == ("zh-CN", None)
