"""What survives a failure: a partly posted answer stays linked to its conversation (through a
surface error, a cancellation and a restart), refusals open nothing, a rate-limited platform
gets bounded retries and a clear sentence, and a question left unanswered merges with the next.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from bot.features.chat.renderer import MARKER
from bot.features.chat.scoping import dm_key
from bot.kernel import Event, MessageRef, OutMessage, Place, RateLimited, SurfaceError
from bot.outbox import WriteRateLimited
from tests.bot.features.chat.support import (
    ALICE,
    BOB,
    CHANNEL,
    DM,
    ROOMY,
    ChatWorld,
    chat_world,
    sim_config,
)
from tests.bot.features.chat.test_scoping import ThreadlessPlatform
from tests.bot.features.chat.test_streaming import seed_whose_first_stream_gets
from tests.fakes.platform import FakePlatform
from tests.storage.helpers import conversation_history


def shown_part(text: str) -> str:
    """A live message's text without the in-progress marker."""
    return text.removesuffix(MARKER).rstrip()


async def conversations(world: ChatWorld) -> int:
    return int(
        await world.store.db.run(
            lambda db: db.conn.execute("SELECT count(*) FROM conversations").fetchone()[0]
        )
    )


class BrokenEdits(ThreadlessPlatform):
    """A channel without threads where editing genbot's answers fails (``SurfaceError``) or
    hangs, while ``broken`` is set."""

    def __init__(self, *, hang: bool = False) -> None:
        super().__init__(profile=ROOMY)
        self.broken = True
        self.hang = hang
        self.edit_started = asyncio.Event()

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        if self.broken and message.from_model:
            self.edit_started.set()
            if self.hang:
                await asyncio.Event().wait()
            raise SurfaceError("the message was deleted")
        await super().edit(ref, message)


class RateLimitedSends(FakePlatform):
    """Refuses genbot's own (not model-written) posts ``refusals`` times with a retry-after."""

    def __init__(self, refusals: int, retry_after: float = 0.02) -> None:
        super().__init__(profile=ROOMY)
        self.refusals = refusals
        self.retry_after = retry_after
        self.refused = 0

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        if not message.from_model and self.refused < self.refusals:
            self.refused += 1
            raise RateLimited(self.retry_after)
        return await super().send(place, message, origin=origin)


async def test_a_partly_posted_answer_stays_linked_when_rendering_fails(tmp_path: Path) -> None:
    platform = BrokenEdits()
    async with chat_world(tmp_path, platform=platform) as world:
        bob = world.actor(BOB, CHANNEL)
        await bob.say("words: 300", mention=True)
        (partial,) = world.posted_in(CHANNEL)
        assert partial.message.from_model and len(partial.history) == 1
        assert "Something went wrong" in world.platform.ephemerals_for("bob")[0]
        platform.broken = False
        await bob.say("what was my first message", reply_to=partial.ref.message_id)
        assert world.texts_in(CHANNEL)[-1] == 'Your first message was: "words: 300"'
        conversation = await world.store.conversations.find_conversation_by_message(
            "fake", CHANNEL.channel_id, partial.ref.message_id
        )
        assert conversation is not None
        turns = await conversation_history(world.store.conversations, conversation.id)
        assert [t.role for t in turns] == ["user", "assistant", "user", "assistant"]
        assert turns[1].platform_message_ids == (partial.ref.message_id,)
        assert turns[1].content and turns[1].content.startswith(shown_part(partial.text))


async def test_an_answer_stopped_mid_stream_is_found_after_a_restart(tmp_path: Path) -> None:
    platform = BrokenEdits(hang=True)
    async with chat_world(tmp_path, platform=platform) as world:
        bob = world.actor(BOB, CHANNEL)
        answering = asyncio.create_task(bob.say("words: 300", mention=True))
        async with asyncio.timeout(10):
            await platform.edit_started.wait()
        answering.cancel()
        await asyncio.gather(answering, return_exceptions=True)
        (partial,) = world.posted_in(CHANNEL)
        platform.broken = False
        await world.restart()
        await world.actor(BOB, CHANNEL).say("echo: still there?", reply_to=partial.ref.message_id)
        assert world.texts_in(CHANNEL)[-1] == "still there?"
        sent = world.chat_bodies()[-1]["messages"]
        assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
        assert sent[2]["content"].startswith(shown_part(partial.text)) and partial.text


async def test_a_mention_too_long_for_the_model_opens_no_thread(world: ChatWorld) -> None:
    await world.actor(BOB, CHANNEL).say("word " * 5000, mention=True)
    await world.actor(BOB, CHANNEL).say("word " * 5000, place=CHANNEL.in_thread("t9"), mention=True)
    await world.actor(ALICE, CHANNEL).command("chat", prompt="word " * 5000)
    refusals = world.platform.ephemerals_for("bob") + world.platform.ephemerals_for("alice")
    assert len(refusals) == 3 and all("too long for llm-3.5-turbo" in r for r in refusals)
    assert world.platform.threads == [] and world.platform.messages == {}
    assert await conversations(world) == 0
    assert world.chat_bodies() == []


async def test_a_rate_limited_question_is_posted_after_the_retry_after(tmp_path: Path) -> None:
    platform = RateLimitedSends(refusals=1)
    async with chat_world(tmp_path, platform=platform) as world:
        await world.actor(ALICE, CHANNEL).command("chat", prompt="echo: patience")
        assert platform.refused == 1
        (question,) = world.posted_in(CHANNEL)
        assert question.text.endswith("asked: echo: patience")
        assert world.platform.ephemerals_for("alice") == []
        (thread,) = world.threads()
        assert world.texts_in(thread) == ["patience"]


async def test_a_platform_that_keeps_refusing_gets_a_clear_message(tmp_path: Path) -> None:
    platform = RateLimitedSends(refusals=100, retry_after=0.01)
    async with chat_world(tmp_path, platform=platform) as world:
        await world.actor(ALICE, CHANNEL).command("chat", prompt="echo: hello?")
        assert platform.refused == 3
        (told,) = world.platform.ephemerals_for("alice")
        assert told == str(WriteRateLimited(0.01))
        assert "rate-limiting" in told and "try again in about 1 second" in told
        assert world.platform.messages == {} and world.chat_bodies() == []


async def test_a_question_left_unanswered_merges_with_the_next(tmp_path: Path) -> None:
    config = sim_config(fault_rate=1.0, seed=seed_whose_first_stream_gets("error_500"))
    async with chat_world(tmp_path, config=config) as world:
        alice = world.actor()
        await alice.say("echo: are you there?")
        assert world.posted_in(DM) == []
        state = world.sim.state
        state.config = replace(state.config, fault_rate=0.0)
        await alice.say("echo: are you there?")
        await alice.say("What was my first message?")
        bodies = world.chat_bodies()
        assert [m["role"] for m in bodies[1]["messages"]] == ["system", "user"]
        assert bodies[1]["messages"][1]["content"] == "echo: are you there?"
        assert [m["role"] for m in bodies[2]["messages"]] == ["system", "user", "assistant", "user"]
        conversation = await world.store.conversations.find_conversation(dm_key(DM))
        assert conversation is not None
        turns = await conversation_history(world.store.conversations, conversation.id)
        assert [t.role for t in turns] == ["user", "user", "assistant", "user", "assistant"]


async def test_different_unanswered_questions_are_asked_together(world: ChatWorld) -> None:
    conversation, _ = await world.store.conversations.get_or_create_conversation(
        dm_key(DM), kind="dm"
    )
    await world.store.conversations.append_message(conversation.id, "user", "Is the ferry running?")
    await world.store.conversations.append_message(conversation.id, "assistant", "", token_count=4)
    await world.actor().say("echo: hello again")
    (body,) = world.chat_bodies()
    assert body["messages"][1:] == [
        {"role": "user", "content": "Is the ferry running?\n\necho: hello again"}
    ]
    assert world.texts_in(DM) == ["hello again"]
