"""An answer whose process ended while it streamed (its handler cancelled mid-edit, then a new
genbot on the same database and platform): the next process settles it — the text stored at
its last write, an _(interrupted)_ note, no cursor, no ⏹ Stop, 🔁 👍 👎 — and stores what it
shows, its tokens recorded. The finished answer before it loses its 🔁 then (a newer answer is
shown); an answer this process still streams is left alone. A message whose process ended
before its answer began is noted as not answered, with 🔁 to answer it, unless a newer message
came since."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from bot.features.chat import VISION_LABEL, VISION_MODEL
from bot.features.chat.controls import BAD_LABEL, GOOD_LABEL, REGENERATE_LABEL, STOP_LABEL
from bot.features.chat.interrupted import INTERRUPTED_NOTE, NOT_ANSWERED_NOTE, InterruptedAnswers
from bot.features.chat.regenerate import REPLACED_NOTE
from bot.features.chat.renderer import MARKER
from bot.features.chat.tokens import count_text
from bot.kernel import Attachment, Event, MessageRef, OutMessage, Place
from tests.bot.features.chat.support import DM, ROOMY, ChatWorld, chat_world, sim_config
from tests.fakes.platform import FakePlatform

SLOW = 5.0
"""The simulator's time scale: a piece of the answer every 0.1 s."""
WORDS = " ".join(f"fox{number}" for number in range(200))
FOX = Attachment("fox.png", url="https://images.example/fox.png", content_type="image/png")


class HeldEdits(FakePlatform):
    """Holds the edits of model-written messages from the ``hold_from``-th on (until the
    writer is cancelled), while ``hold`` is set."""

    def __init__(self, hold_from: int) -> None:
        super().__init__(profile=ROOMY)
        self.hold_from = hold_from
        self.hold = False
        self.answer_edits = 0
        self.holding = asyncio.Event()

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        if self.hold and message.from_model:
            self.answer_edits += 1
            if self.answer_edits >= self.hold_from:
                self.holding.set()
                await asyncio.Event().wait()
        await super().edit(ref, message)


class HeldPosts(FakePlatform):
    """Holds every post (until the writer is cancelled) while ``hold`` is set: a process that
    stops after storing a message, before its answer is posted."""

    def __init__(self) -> None:
        super().__init__(profile=ROOMY)
        self.hold = False
        self.holding = asyncio.Event()

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        if self.hold:
            self.holding.set()
            await asyncio.Event().wait()
        return await super().send(place, message, origin=origin)


def settler(world: ChatWorld) -> InterruptedAnswers:
    """The settling service as :func:`genbot.compose.build_core` wires it, for ``world``'s
    genbot (swept by the test rather than on its clock)."""
    store = world.store
    return InterruptedAnswers(
        store.conversations,
        store.conversation_locks,
        store.settings,
        world.genbot.parts.outbox,
        world.engine.turn_lock,
        ledger=store.ledger,
    )


async def test_an_answer_left_streaming_is_settled_by_the_next_process(tmp_path: Path) -> None:
    platform = HeldEdits(hold_from=3)
    async with chat_world(tmp_path, config=sim_config(time_scale=SLOW), platform=platform) as world:
        alice = world.actor()
        await alice.say("echo: finished first")
        [finished] = world.posted_in(DM)
        finished_history = list(finished.history)
        used = await world.store.ledger.usage_for_user("fake", "alice")

        platform.hold = True
        asking = asyncio.create_task(alice.say(f"echo: {WORDS}"))
        await asyncio.wait_for(platform.holding.wait(), 20)
        live = world.posted_in(DM)[-1]
        shown = live.text.removesuffix(MARKER)
        assert live.text.endswith(MARKER) and len(live.history) == 3
        assert [b.label for b in live.buttons] == [STOP_LABEL]
        turns = await world.store.conversations.conversation_tail(1, max_tokens=10**9)
        assert (turns[-1].state, turns[-1].content) == ("streaming", shown), "stored as shown"
        assert await settler(world).sweep() == 0, "this process still streams it"

        asking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asking
        platform.hold = False
        await world.restart()
        settling = settler(world)
        assert await settling.sweep() == 1
        assert await settling.sweep() == 0

        settled = platform.messages[live.ref.message_id]
        assert settled.text == f"{shown}\n\n{INTERRUPTED_NOTE}"
        assert MARKER not in settled.text
        assert [b.label for b in settled.buttons] == [REGENERATE_LABEL, GOOD_LABEL, BAD_LABEL]
        retired = platform.messages[finished.ref.message_id]
        assert retired.history[:-1] == finished_history, "one edit: its 🔁 taken off"
        assert retired.text == finished_history[-1].text
        assert [b.label for b in retired.buttons] == [GOOD_LABEL, BAD_LABEL]
        turns = await world.store.conversations.conversation_tail(1, max_tokens=10**9)
        assert [(t.role, t.state) for t in turns] == [
            ("user", None),
            ("assistant", None),
            ("user", None),
            ("assistant", "interrupted"),
        ]
        assert turns[-1].content == settled.text
        assert turns[1].content == finished.text
        now_used = await world.store.ledger.usage_for_user("fake", "alice")
        assert now_used.entries == used.entries + 1
        assert now_used.tokens_prompt > used.tokens_prompt, "its prompt, recorded as it began"
        assert now_used.tokens_completion == used.tokens_completion + count_text(shown)

        await world.actor().say("echo: next")
        history = world.chat_bodies()[-1]["messages"]
        assert {"role": "assistant", "content": settled.text} in history


async def test_an_answer_settled_after_a_newer_one_is_shown_gets_no_regenerate(
    tmp_path: Path,
) -> None:
    platform = HeldEdits(hold_from=3)
    async with chat_world(tmp_path, config=sim_config(time_scale=SLOW), platform=platform) as world:
        alice = world.actor()
        await alice.say("echo: finished first")
        [finished] = world.posted_in(DM)
        platform.hold = True
        asking = asyncio.create_task(alice.say(f"echo: {WORDS}"))
        await asyncio.wait_for(platform.holding.wait(), 20)
        live = world.posted_in(DM)[-1]
        asking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asking
        platform.hold = False
        await world.restart()

        left = len(live.history)
        await world.actor().say("echo: newer")
        newer = world.posted_in(DM)[-1]
        assert len(live.history) == left, "the newer answer leaves it to whoever settles it"
        assert [b.label for b in newer.buttons] == [REGENERATE_LABEL, GOOD_LABEL, BAD_LABEL]
        assert [b.label for b in finished.buttons] == [REGENERATE_LABEL, GOOD_LABEL, BAD_LABEL], (
            "the newer answer leaves the one streaming before it to whoever settles it"
        )
        assert await settler(world).sweep() == 1
        settled = platform.messages[live.ref.message_id]
        assert settled.text.endswith(INTERRUPTED_NOTE)
        assert [b.label for b in settled.buttons] == [GOOD_LABEL, BAD_LABEL]
        assert [b.label for b in finished.buttons] == [GOOD_LABEL, BAD_LABEL]
        assert [b.label for b in newer.buttons] == [REGENERATE_LABEL, GOOD_LABEL, BAD_LABEL]


async def unanswered(world: ChatWorld, platform: HeldPosts, text: str) -> None:
    """Alice says ``text`` and genbot stops before its answer is posted (its handler cancelled
    while the first post is held; the message is stored), then starts again."""
    await stopped_during(world, platform, lambda: world.actor().say(text))


async def stopped_during(
    world: ChatWorld, platform: HeldPosts, doing: Callable[[], Coroutine[Any, Any, object]]
) -> None:
    """genbot stops while ``doing`` (what starts an answer) waits for its first post (its
    handler cancelled while the post is held, as the drain does), then starts again."""
    platform.hold = True
    asking = asyncio.create_task(doing())
    await asyncio.wait_for(platform.holding.wait(), 20)
    assert await settler(world).sweep() == 0, "this process still answers it"
    world.core.stop_intake()
    asking.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asking
    platform.hold = False
    await world.restart()


async def test_a_message_whose_answer_never_began_is_noted_by_the_next_process(
    tmp_path: Path,
) -> None:
    platform = HeldPosts()
    async with chat_world(tmp_path, platform=platform) as world:
        alice = world.actor()
        await alice.say("echo: finished first")
        [finished] = world.posted_in(DM)
        await unanswered(world, platform, "echo: never answered")
        assert len(world.posted_in(DM)) == 1

        settling = settler(world)
        assert await settling.sweep() == 1
        assert await settling.sweep() == 0
        note = world.posted_in(DM)[-1]
        assert note.text == NOT_ANSWERED_NOTE
        assert [b.label for b in note.buttons] == [REGENERATE_LABEL, GOOD_LABEL, BAD_LABEL]
        assert [b.label for b in finished.buttons] == [GOOD_LABEL, BAD_LABEL]

        await world.actor().press(note, REGENERATE_LABEL)
        answer = world.posted_in(DM)[-1]
        assert answer.text == "never answered"
        assert [b.label for b in note.buttons] == []
        turns = await world.store.conversations.conversation_tail(1, max_tokens=10**9)
        assert [(t.role, t.state) for t in turns] == [
            ("user", None),
            ("assistant", None),
            ("user", None),
            ("assistant", "replaced"),
            ("assistant", None),
        ]
        assert world.chat_bodies()[-1]["messages"][-1] == {
            "role": "user",
            "content": "echo: never answered",
        }


async def test_a_message_cut_short_by_its_deadline_is_not_noted_by_the_live_process(
    tmp_path: Path,
) -> None:
    # The router's handler deadline cancels the handler too (task.cancelling()), but genbot
    # goes on: the user was told it was too slow, and no "genbot stopped" note follows.
    platform = HeldPosts()
    async with chat_world(tmp_path, platform=platform) as world:
        platform.hold = True
        asking = asyncio.create_task(world.actor().say("echo: too slow"))
        await asyncio.wait_for(platform.holding.wait(), 20)
        asking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asking
        platform.hold = False
        assert await settler(world).sweep() == 0
        assert world.posted_in(DM) == []
        turns = await world.store.conversations.conversation_tail(1, max_tokens=10**9)
        assert [(t.role, t.state) for t in turns] == [("user", None)]


async def test_an_unanswered_message_followed_by_a_newer_one_gets_no_note(tmp_path: Path) -> None:
    platform = HeldPosts()
    async with chat_world(tmp_path, platform=platform) as world:
        await unanswered(world, platform, "echo: never answered")
        await world.actor().say("echo: newer")
        assert await settler(world).sweep() == 0
        [answer] = world.posted_in(DM)
        assert answer.text == "never answered\n\necho: newer", "both read, no note"
        turns = await world.store.conversations.conversation_tail(1, max_tokens=10**9)
        assert [(t.role, t.state) for t in turns] == [
            ("user", None),
            ("user", None),
            ("assistant", None),
        ]


async def noted(world: ChatWorld) -> None:
    """The next process notes the newest message as not answered, and its 🔁 answers it."""
    settling = settler(world)
    assert await settling.sweep() == 1
    assert await settling.sweep() == 0
    note = world.posted_in(DM)[-1]
    assert note.text == NOT_ANSWERED_NOTE
    assert [b.label for b in note.buttons] == [REGENERATE_LABEL, GOOD_LABEL, BAD_LABEL]
    await world.actor().press(note, REGENERATE_LABEL)
    assert [b.label for b in note.buttons] == []
    turns = await world.store.conversations.conversation_tail(1, max_tokens=10**9)
    assert [(t.role, t.state) for t in turns[-2:]] == [
        ("assistant", "replaced"),
        ("assistant", None),
    ]
    assert not await world.store.conversations.streaming_answers(10)


async def test_an_edit_whose_answer_never_began_is_noted_by_the_next_process(
    tmp_path: Path,
) -> None:
    platform = HeldPosts()
    async with chat_world(tmp_path, platform=platform) as world:
        alice = world.actor()
        await alice.say("echo: one")
        second = await alice.say("echo: two")
        await stopped_during(world, platform, lambda: alice.edit(second, "echo: TWO"))
        assert world.texts_in(DM) == ["one", "two"]
        await noted(world)
        assert world.texts_in(DM)[-1] == "TWO"
        sent = world.chat_bodies()[-1]["messages"]
        assert [m["content"] for m in sent if m["role"] != "system"] == [
            "echo: one",
            "one",
            "echo: TWO",
        ]


async def test_a_vision_switch_whose_answer_never_began_is_noted_by_the_next_process(
    tmp_path: Path,
) -> None:
    platform = HeldPosts()
    async with chat_world(tmp_path, platform=platform) as world:
        alice = world.actor()
        await alice.say("What is in this picture?", attachments=(FOX,))
        [offer] = world.posted_in(DM)
        await stopped_during(world, platform, lambda: alice.press(offer, VISION_LABEL))
        assert world.texts_in(DM) == [f"Switched this conversation to {VISION_MODEL}."]
        await noted(world)
        assert world.chat_bodies()[-1]["model"] == VISION_MODEL
        assert world.texts_in(DM)[-1].startswith(f"I see 1 image: {FOX.url}")


async def test_a_regenerate_whose_answer_never_began_is_noted_by_the_next_process(
    tmp_path: Path,
) -> None:
    platform = HeldPosts()
    async with chat_world(tmp_path, platform=platform) as world:
        alice = world.actor()
        await alice.say("echo: once more")
        [answer] = world.posted_in(DM)
        await stopped_during(world, platform, lambda: alice.press(answer, REGENERATE_LABEL))
        assert answer.text == f"once more\n\n{REPLACED_NOTE}" and answer.buttons == []
        await noted(world)
        assert world.texts_in(DM)[-1] == "once more"
