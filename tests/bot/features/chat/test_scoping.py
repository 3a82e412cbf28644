"""Where conversations live: DMs, threads opened on mentions, reply chains; history survives."""

from __future__ import annotations

from pathlib import Path

from bot.features.chat.scoping import DEFAULT_TITLE, thread_title
from bot.kernel import MessageRef, Place, SurfaceError
from tests.bot.features.chat.support import ALICE, BOB, CHANNEL, DM, ROOMY, ChatWorld, chat_world
from tests.fakes.platform import FakePlatform


class ThreadlessPlatform(FakePlatform):
    """A platform (or channel) where genbot may not open threads."""

    async def start_thread(self, ref: MessageRef, name: str) -> Place:
        raise SurfaceError("threads are disabled in this channel")


async def test_dm_keeps_context_over_three_turns(world: ChatWorld) -> None:
    alice = world.actor()
    await alice.say("echo: Nice to meet you.")
    await alice.say("echo: The weather is fine.")
    await alice.say("What was my first message?")
    assert world.texts_in(DM) == [
        "Nice to meet you.",
        "The weather is fine.",
        'Your first message was: "echo: Nice to meet you."',
    ]
    last = world.chat_bodies()[-1]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert all(m.message.from_model for m in world.posted_in(DM))


async def test_history_survives_a_restart(world: ChatWorld) -> None:
    await world.actor().say("echo: Remember the lighthouse.")
    await world.restart()
    await world.actor().say("what was my first message")
    assert world.texts_in(DM)[-1] == 'Your first message was: "echo: Remember the lighthouse."'


async def test_a_mention_opens_a_thread_that_continues(world: ChatWorld) -> None:
    bob = world.actor(BOB, CHANNEL)
    asked = await bob.say("echo: Ahoy from the **channel**", mention=True)
    ((root, title),) = world.platform.threads
    assert root == MessageRef(CHANNEL, asked)
    assert title == "echo: Ahoy from the channel"
    (thread,) = world.threads()
    assert world.texts_in(thread) == ["Ahoy from the **channel**"]
    await bob.say("what was my first message", place=thread)
    await world.actor(ALICE, CHANNEL).say("echo: alice joins", place=thread)
    assert world.texts_in(thread)[1:] == [
        'Your first message was: "echo: Ahoy from the **channel**"',
        "alice joins",
    ]
    assert world.texts_in(CHANNEL) == []
    turns = await world.store.db.fetch_all("SELECT author FROM messages WHERE role = 'user'")
    assert [turn["author"] for turn in turns] == [BOB.id, BOB.id, ALICE.id]
    kept = await world.store.retention.kept("fake", ALICE.id)
    assert kept.kinds["messages_in_others"] == 1, "/forget-me names her turn in Bob's thread"


async def test_a_mention_inside_an_unknown_thread_adopts_it(world: ChatWorld) -> None:
    thread = CHANNEL.in_thread("t-people")
    bob = world.actor(BOB, CHANNEL)
    await bob.say("echo: not for the bot", place=thread)
    await bob.say("echo: now you", place=thread, mention=True)
    await bob.say("what was my first message", place=thread)
    assert world.texts_in(thread) == ["now you", 'Your first message was: "echo: now you"']
    assert world.platform.threads == []


async def test_unrelated_messages_are_ignored(world: ChatWorld) -> None:
    bob = world.actor(BOB, CHANNEL)
    await bob.say("echo: just chatting with humans")
    await bob.say("echo: a reply to someone else", reply_to="u-unknown")
    await bob.say("echo: in some thread", place=CHANNEL.in_thread("t-other"))
    await bob.say("   ", mention=True)
    assert world.platform.messages == {}
    assert world.platform.threads == []
    assert world.chat_bodies() == []


async def test_a_message_with_control_characters_is_refused_before_the_model(
    world: ChatWorld,
) -> None:
    alice = world.actor()
    await alice.say("echo: ring\x07 the bell")
    await world.actor(BOB, CHANNEL).say("echo: \u202etxt.exe", mention=True)
    await world.actor(BOB, CHANNEL).say("echo: \x00 unrelated, not for genbot")

    assert world.platform.ephemerals_for(ALICE.id) == [
        "Your message contains BEL (U+0007); remove it."
    ]
    assert world.platform.ephemerals_for(BOB.id) == [
        "Your message contains a bidirectional override (U+202E), which makes text read "
        "differently from what it is; remove it."
    ]
    assert world.chat_bodies() == []
    assert world.platform.threads == []


async def test_replies_in_the_channel_continue_a_thread_conversation(world: ChatWorld) -> None:
    bob = world.actor(BOB, CHANNEL)
    first = await bob.say("echo: the plan is ready", mention=True)
    (thread,) = world.threads()
    await bob.say("what was my first message", reply_to=first)
    assert world.texts_in(thread)[-1] == 'Your first message was: "echo: the plan is ready"'
    assert world.texts_in(CHANNEL) == []


async def test_reply_chain_when_threads_are_unavailable(tmp_path: Path) -> None:
    platform = ThreadlessPlatform(profile=ROOMY)
    async with chat_world(tmp_path, platform=platform) as world:
        bob = world.actor(BOB, CHANNEL)
        asked = await bob.say("words: 450", mention=True)
        answers = world.posted_in(CHANNEL)
        assert len(answers) >= 2, "the answer should be long enough to continue"
        assert answers[0].origin is not None and answers[0].origin.message_id == asked  # type: ignore[attr-defined]
        await bob.say("echo: second turn", reply_to=answers[-1].ref.message_id)
        await bob.say("what was my first message", reply_to=answers[0].ref.message_id)
        texts = world.texts_in(CHANNEL)
        assert texts[-2:] == ["second turn", 'Your first message was: "words: 450"']
        assert world.posted_in(CHANNEL)[-1].origin is not None
        await bob.say("echo: not a reply")
        assert len(world.texts_in(CHANNEL)) == len(texts)


def test_thread_titles_are_short_and_plain() -> None:
    assert thread_title("<@123> **Plan** the `launch` party!") == "Plan the launch party!"
    long = thread_title("word " * 40)
    assert len(long) <= 60 and long.endswith("word")
    assert thread_title("<@123>") == DEFAULT_TITLE
    assert len(thread_title("x" * 500)) == 60
