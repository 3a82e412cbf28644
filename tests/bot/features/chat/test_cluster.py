"""genbot processes on one PostgreSQL database: two receiving messages of one conversation
answer each turn once and in the order they asked for the conversation; three streaming answers
into one channel together stay within its write limit (the platform answers no 429); ⏹ Stop
pressed on a process that does not stream the answer stops it on the one that does; an answer
one process streams is settled by another only once the first is gone, not when only the
connection holding its conversation's lock failed."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from bot.features.chat import ChatEngine, interrupted
from bot.features.chat.controls import (
    BAD_LABEL,
    GOOD_LABEL,
    REGENERATE_LABEL,
    STOP_LABEL,
    AnswerControls,
)
from bot.features.chat.engine import ChatStorage
from bot.features.chat.interrupted import INTERRUPTED_NOTE, InterruptedAnswers
from bot.features.chat.renderer import MARKER, STOPPED_NOTE
from bot.features.chat.stops import StopRequests
from bot.kernel import Event, MessageRef, OutMessage, Place, PlatformProfile, User
from bot.router import Feature
from simulator.server import serve
from storage import ConversationKey
from tests.bot.features.chat.support import ALICE, CHANNEL, DM, ROOMY, sim_config
from tests.bot.features.chat.test_interrupted import HeldEdits
from tests.bot.harness import Parts, running_genbot
from tests.fakes.platform import Actor, FakePlatform, PostedMessage
from tests.postgres import PostgresCluster
from tests.storage.helpers import (
    conversation_history,
    cut_lock_holders,
    until_waiting_for_lock,
)

ENGINES: dict[int, ChatEngine] = {}


def chat_engine(parts: Parts) -> ChatEngine:
    """The chat engine of a test genbot (one per genbot: the feature and the conversations)."""
    engine = ENGINES.get(id(parts))
    if engine is None:
        store = parts.store
        storage = ChatStorage(
            store.conversations, store.conversation_locks, store.settings, store.ledger
        )
        engine = ChatEngine(storage, parts.provider, parts.outbox)
        ENGINES[id(parts)] = engine
    return engine


def chat_feature(parts: Parts) -> list[ChatEngine]:
    return [chat_engine(parts)]


class HeldPlatform(FakePlatform):
    """The fake platform, able to hold the next post until released: a turn that takes as long
    as the test needs."""

    def __init__(self, profile: PlatformProfile) -> None:
        super().__init__(profile=profile)
        self.hold_next = False
        self.holding = asyncio.Event()
        self.released = asyncio.Event()

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        if self.hold_next:
            self.hold_next = False
            self.holding.set()
            await self.released.wait()
        return await super().send(place, message, origin=origin)


async def test_two_processes_answer_one_conversation_once_per_turn_in_order(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    """The second process asks for the conversation while the first answers turn one; the first
    gets turn three after that: turn three waits for turn two, in the order they asked (the
    asks are ordered by what the server shows, not by sleeps)."""
    platform = HeldPlatform(ROOMY)
    url = postgres.create_database()
    on_postgres: dict[str, Any] = {
        "platform": platform,
        "storage_url": url,
        "conversations": chat_engine,
    }
    async with (
        serve(sim_config(time_scale=0.02)) as sim,
        running_genbot(sim, tmp_path / "a.db", **on_postgres) as first,
        running_genbot(sim, tmp_path / "b.db", **on_postgres) as second,
        asyncio.timeout(60),
    ):
        platform.hold_next = True
        one = asyncio.create_task(Actor(first.core, platform, ALICE, DM).say("echo: one"))
        await platform.holding.wait()
        conversation = await first.store.conversations.find_conversation(
            ConversationKey("fake", "w1", DM.channel_id)
        )
        assert conversation is not None
        two = asyncio.create_task(Actor(second.core, platform, ALICE, DM).say("echo: two"))
        await until_waiting_for_lock(url, f"genbot.conversation.{conversation.id}")
        three = asyncio.create_task(Actor(first.core, platform, ALICE, DM).say("echo: three"))
        platform.released.set()
        await asyncio.gather(one, two, three)
        turns = await conversation_history(second.store.conversations, conversation.id)
        assert [(turn.role, turn.content) for turn in turns] == [
            ("user", "echo: one"),
            ("assistant", "one"),
            ("user", "echo: two"),
            ("assistant", "two"),
            ("user", "echo: three"),
            ("assistant", "three"),
        ]
        answers = [m.text for m in platform.in_place(DM)]
        assert answers == ["one", "two", "three"]


async def test_three_processes_streaming_into_one_channel_get_no_429(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    tight = PlatformProfile(max_text=2000, edits_per_window_per_channel=4, edit_window_seconds=1.0)
    platform = FakePlatform(profile=tight, enforce_windows=True)
    on_postgres: dict[str, Any] = {
        "platform": platform,
        "storage_url": postgres.create_database(),
        "conversations": chat_engine,
        "features": chat_feature,
    }
    users = [User(f"user{n}", f"User {n}") for n in range(3)]
    async with (
        serve(sim_config(time_scale=1.0)) as sim,
        running_genbot(sim, tmp_path / "a.db", **on_postgres) as first,
        running_genbot(sim, tmp_path / "b.db", **on_postgres) as second,
        running_genbot(sim, tmp_path / "c.db", **on_postgres) as third,
    ):
        processes = (first, second, third)
        async with asyncio.timeout(90):
            await asyncio.gather(
                *(
                    Actor(bot.core, platform, user, CHANNEL).command("chat", prompt="words: 200")
                    for bot, user in zip(processes, users, strict=True)
                )
            )
        answers = [m for m in platform.messages.values() if m.message.from_model]
        assert sorted(len(m.text.split()) for m in answers) == [200, 200, 200]
        assert platform.rate_limited == 0


async def test_stop_pressed_on_another_process_stops_the_answer_where_it_streams(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    platform = FakePlatform(profile=ROOMY)
    stops: list[StopRequests] = []

    def controlled(parts: Parts) -> list[Feature[Any]]:
        store = parts.store
        requests = StopRequests(store.answer_stops)
        stops.append(requests)
        storage = ChatStorage(
            store.conversations, store.conversation_locks, store.settings, store.ledger
        )
        engine = ChatEngine(storage, parts.provider, parts.outbox, stops=requests)
        ENGINES[id(parts)] = engine
        return [engine, AnswerControls(requests, store.feedback, parts.outbox, store.conversations)]

    on_postgres: dict[str, Any] = {
        "platform": platform,
        "storage_url": postgres.create_database(),
        "conversations": chat_engine,
        "features": controlled,
    }
    words = " ".join(f"fox{number}" for number in range(150))
    async with (
        serve(sim_config(time_scale=5.0)) as sim,
        running_genbot(sim, tmp_path / "a.db", **on_postgres) as first,
        running_genbot(sim, tmp_path / "b.db", **on_postgres) as second,
        asyncio.timeout(60),
    ):
        for requests in stops:
            await requests.start()
            await requests.listening.wait()
        try:
            asking = asyncio.create_task(
                Actor(first.core, platform, ALICE, DM).say(f"echo: {words}")
            )

            def streaming() -> PostedMessage | None:
                for message in platform.in_place(DM):
                    if "fox3 " in message.text and any(
                        b.label == STOP_LABEL for b in message.buttons
                    ):
                        return message
                return None

            answer = await platform.wait_for(streaming, 20, "the answer streaming")
            await Actor(second.core, platform, ALICE, DM).press(answer, STOP_LABEL)
            await asyncio.wait_for(asking, 10)
            assert platform.messages[answer.ref.message_id].text.endswith(STOPPED_NOTE)
            assert "fox149" not in answer.text
            sent = sim.state.stream_bytes[-1]
            await asyncio.sleep(0.5)
            assert sim.state.stream_bytes[-1] == sent, "the simulator sent nothing after the stop"
        finally:
            for requests in stops:
                await requests.stop()


async def test_an_answer_is_settled_by_another_process_once_its_own_ended(
    postgres: PostgresCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second process leaves the first's streaming answer alone (the first holds the
    conversation's lock), and settles it once the first is gone (its turn cancelled: the lock
    released, the answer left ``streaming``)."""
    monkeypatch.setattr(interrupted, "LOST_LOCK_SECONDS", 0.1)
    platform = HeldEdits(hold_from=3)
    on_postgres: dict[str, Any] = {
        "platform": platform,
        "storage_url": postgres.create_database(),
        "conversations": chat_engine,
    }
    async with (
        serve(sim_config(time_scale=5.0)) as sim,
        running_genbot(sim, tmp_path / "a.db", **on_postgres) as first,
        running_genbot(sim, tmp_path / "b.db", **on_postgres) as second,
        asyncio.timeout(60),
    ):
        platform.hold = True
        words = " ".join(f"fox{number}" for number in range(200))
        asking = asyncio.create_task(Actor(first.core, platform, ALICE, DM).say(f"echo: {words}"))
        await platform.holding.wait()
        [live] = platform.in_place(DM)
        shown = live.text.removesuffix(MARKER)
        store = second.store
        other = InterruptedAnswers(
            store.conversations,
            store.conversation_locks,
            store.settings,
            second.parts.outbox,
            chat_engine(second.parts).turn_lock,
        )
        assert await other.sweep() == 0
        assert len(live.history) == 3 and [b.label for b in live.buttons] == [STOP_LABEL]

        asking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asking
        platform.hold = False
        assert await other.sweep() == 1
        assert live.text == f"{shown}\n\n{INTERRUPTED_NOTE}"
        assert [b.label for b in live.buttons] == [REGENERATE_LABEL, GOOD_LABEL, BAD_LABEL]
        [turn] = [
            t for t in await conversation_history(store.conversations, 1) if t.role == "assistant"
        ]
        assert (turn.state, turn.content) == ("interrupted", live.text)


async def test_an_answer_whose_lock_connection_was_cut_is_never_settled_while_it_streams(
    postgres: PostgresCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first process's connection holding the conversation's lock is terminated while it
    streams an answer: it holds the lock again at once, so the second process's sweep, which
    found the lock free, settles nothing (no _(interrupted)_ note on a live answer), and the
    answer ends once, as the first writes it."""
    monkeypatch.setattr(interrupted, "LOST_LOCK_SECONDS", 0.5)
    platform = FakePlatform(profile=ROOMY)
    url = postgres.create_database()
    on_postgres: dict[str, Any] = {
        "platform": platform,
        "storage_url": url,
        "conversations": chat_engine,
    }
    words = " ".join(f"fox{number}" for number in range(60))
    async with (
        serve(sim_config(time_scale=5.0)) as sim,
        running_genbot(sim, tmp_path / "a.db", **on_postgres) as first,
        running_genbot(sim, tmp_path / "b.db", **on_postgres) as second,
        asyncio.timeout(60),
    ):
        asking = asyncio.create_task(Actor(first.core, platform, ALICE, DM).say(f"echo: {words}"))

        def streaming() -> PostedMessage | None:
            for message in platform.in_place(DM):
                if "fox3 " in message.text and message.buttons:
                    return message
            return None

        live = await platform.wait_for(streaming, 20, "the answer streaming")
        assert len(cut_lock_holders(url, "genbot.conversation.1")) == 1
        store = second.store
        other = InterruptedAnswers(
            store.conversations,
            store.conversation_locks,
            store.settings,
            second.parts.outbox,
            chat_engine(second.parts).turn_lock,
        )
        assert await other.sweep() == 0
        assert "fox59" not in live.text, "the answer still streamed as the sweep ended"
        await asking
        assert await other.sweep() == 0
        assert [m.text for m in platform.in_place(DM)] == [words]
        assert all(INTERRUPTED_NOTE not in shown.text for shown in live.history)
        assert [b.label for b in live.buttons] == [REGENERATE_LABEL, GOOD_LABEL, BAD_LABEL]
        turns = await conversation_history(store.conversations, 1)
        assert [(turn.role, turn.content, turn.state) for turn in turns] == [
            ("user", f"echo: {words}", None),
            ("assistant", words, None),
        ]
