"""An answer's controls on the fake platform, against the simulator over HTTP: ⏹ Stop while it
streams (the provider's stream is closed: the simulator sends nothing more), 🔁 regenerate (its
message checked against the rules in force, as if typed), and 👍/👎 stored, counted and shown to
admins by ``/usage``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.features.chat.controls import (
    BAD_LABEL,
    GOOD_LABEL,
    REGENERATE_ACTION,
    REGENERATE_LABEL,
    STOP_LABEL,
)
from bot.features.chat.regenerate import ALREADY_REGENERATED, ONLY_THE_NEWEST, REPLACED_NOTE
from bot.features.chat.renderer import STOPPED_NOTE
from bot.kernel import STOP_ACTION, ButtonPress, User, metrics
from simulator.chat import PIECE_DELAY_SECONDS
from storage import ModerationRule
from tests.bot.features.chat.support import (
    ALICE,
    BOB,
    BOB_DM,
    DM,
    ChatWorld,
    chat_world,
    sim_config,
)
from tests.bot.test_router import untimed
from tests.fakes.platform import PostedMessage

SLOW = 5.0
"""The simulator's time scale: a piece of the answer every 0.1 s."""
WORDS = " ".join(f"fox{number}" for number in range(120))
ONE_EVENT = 250
"""More than one event of the stream takes (``data: {…"content":"fox12 "…}``, about 190 bytes)."""


def answer_in(world: ChatWorld, label: str) -> PostedMessage | None:
    """genbot's newest message in Alice's DM carrying a button ``label``."""
    for message in reversed(world.posted_in(DM)):
        if any(button.label == label for button in message.buttons):
            return message
    return None


async def test_stop_closes_the_providers_stream_and_keeps_what_was_shown(tmp_path: Path) -> None:
    async with chat_world(tmp_path, config=sim_config(time_scale=SLOW)) as world:
        alice = world.actor()
        asking = asyncio.create_task(alice.say(f"echo: {WORDS}"))

        def streaming_now() -> PostedMessage | None:
            message = answer_in(world, STOP_LABEL)
            return message if message is not None and "fox3 " in message.text else None

        streaming = await world.platform.wait_for(streaming_now, 20, "the answer streaming")
        edits_before = len(streaming.history)
        await alice.press(streaming, STOP_LABEL)
        pressed_at = world.sim.state.stream_bytes[-1]
        await asyncio.wait_for(asking, 10)
        stopped = world.platform.messages[streaming.ref.message_id]
        assert stopped.text.endswith(STOPPED_NOTE)
        assert [b.label for b in stopped.buttons] == [REGENERATE_LABEL, GOOD_LABEL, BAD_LABEL]
        assert len(stopped.history) <= edits_before + 1
        await asyncio.sleep(PIECE_DELAY_SECONDS * SLOW * 5)
        sent = world.sim.state.stream_bytes[-1]
        assert sent - pressed_at <= ONE_EVENT, "at most the piece on its way when the press came"
        shown = stopped.text.removesuffix(STOPPED_NOTE).rstrip()
        assert "fox119" not in shown
        turns = await world.store.conversations.conversation_tail(1, max_tokens=10**9)
        answer = turns[-1]
        assert (answer.role, answer.state, answer.content) == ("assistant", "stopped", shown)
        await alice.say("echo: next")
        await world.platform.wait_for(lambda: answer_in(world, GOOD_LABEL) is not stopped, 10)
        history = world.chat_bodies()[-1]["messages"]
        assert {"role": "assistant", "content": shown} in history


async def test_stop_after_the_answer_ended_says_so(tmp_path: Path) -> None:
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        await alice.say("echo: a short one")
        answer = answer_in(world, GOOD_LABEL)
        assert answer is not None and not any(b.label == STOP_LABEL for b in answer.buttons)
        again = answer.button(REGENERATE_LABEL)
        press = ButtonPress(
            user=ALICE,
            place=DM,
            message_id=answer.ref.message_id,
            action=STOP_ACTION,
            ref=again.ref,
        )
        await world.core.handle(press)
        assert world.platform.ephemerals[-1].text == "This answer has already finished."


async def test_regenerate_replaces_the_answer_in_the_history_and_keeps_it_shown(
    tmp_path: Path,
) -> None:
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        await alice.say("words: 12")
        first = answer_in(world, REGENERATE_LABEL)
        assert first is not None
        old_text = first.text
        await alice.press(first, REGENERATE_LABEL)
        shown_old = world.platform.messages[first.ref.message_id]
        assert shown_old.text == f"{old_text}\n\n{REPLACED_NOTE}" and not shown_old.buttons
        second = answer_in(world, REGENERATE_LABEL)
        assert second is not None and second is not shown_old
        bodies = world.chat_bodies()
        assert bodies[-1]["messages"] == bodies[-2]["messages"], "the same history"
        turns = await world.store.conversations.conversation_tail(1, max_tokens=10**9)
        assert [(t.role, t.state) for t in turns] == [
            ("user", None),
            ("assistant", "replaced"),
            ("assistant", None),
        ]
        await alice.say("echo: and then")
        history = world.chat_bodies()[-1]["messages"]
        assert [m["role"] for m in history if m["role"] != "system"] == [
            "user",
            "assistant",
            "user",
        ]
        assert history[-2]["content"] == turns[-1].content
        assert [b.label for b in second.buttons] == [GOOD_LABEL, BAD_LABEL]
        raced = ButtonPress(
            user=ALICE,
            place=DM,
            message_id=second.ref.message_id,
            action=REGENERATE_ACTION,
            ref=second.button(GOOD_LABEL).ref,
        )
        await world.core.handle(raced)
        assert world.platform.ephemerals[-1].text == ONLY_THE_NEWEST, "a press that raced it"


async def test_regenerate_pressed_three_times_at_once_answers_once(tmp_path: Path) -> None:
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        await alice.say("echo: race base")
        first = answer_in(world, REGENERATE_LABEL)
        assert first is not None
        calls = len(world.chat_bodies())

        await asyncio.gather(*(alice.press(first, REGENERATE_LABEL) for _ in range(3)))

        assert len(world.chat_bodies()) == calls + 1, "one new answer asked for"
        assert world.platform.ephemerals_for(ALICE.id) == [ALREADY_REGENERATED] * 2
        turns = await world.store.conversations.conversation_tail(1, max_tokens=10**9)
        assert [(t.role, t.state) for t in turns] == [
            ("user", None),
            ("assistant", "replaced"),
            ("assistant", None),
        ]
        live = [m for m in world.posted_in(DM) if any(b.label == GOOD_LABEL for b in m.buttons)]
        assert len(live) == 1, "one answer with controls"


async def test_regenerate_keeps_what_the_last_message_of_a_long_answer_showed(
    tmp_path: Path,
) -> None:
    words = " ".join(f"word{number}" for number in range(700))
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        await alice.say(f"echo: {words}")
        parts = world.posted_in(DM)
        assert len(parts) >= 3
        shown = [part.text for part in parts]

        await alice.press(parts[-1], REGENERATE_LABEL)

        assert [part.text for part in parts[:-1]] == shown[:-1]
        assert parts[-1].text == f"{shown[-1]}\n\n{REPLACED_NOTE}"


async def test_regenerate_keeps_the_stopped_mark(tmp_path: Path) -> None:
    async with chat_world(tmp_path, config=sim_config(time_scale=SLOW)) as world:
        alice = world.actor()
        asking = asyncio.create_task(alice.say(f"echo: {WORDS}"))

        def streaming_now() -> PostedMessage | None:
            message = answer_in(world, STOP_LABEL)
            return message if message is not None and "fox3 " in message.text else None

        streaming = await world.platform.wait_for(streaming_now, 20, "the answer streaming")
        await alice.press(streaming, STOP_LABEL)
        await asyncio.wait_for(asking, 10)
        stopped = world.platform.messages[streaming.ref.message_id]
        shown = stopped.text
        assert shown.endswith(STOPPED_NOTE)

        await alice.press(stopped, REGENERATE_LABEL)

        assert stopped.text == f"{shown}\n\n{REPLACED_NOTE}"


async def test_regenerate_checks_the_message_against_the_rules_in_force_as_if_typed(
    tmp_path: Path,
) -> None:
    async with chat_world(tmp_path, moderated=True) as world:
        alice = world.actor()
        await alice.say("echo: a gory fox")
        answer = answer_in(world, REGENERATE_LABEL)
        assert answer is not None
        await world.store.moderation.add_rule("fake", "w1", ModerationRule("gore", "gory"), "root")
        calls, shown = len(world.chat_bodies()), answer.text

        await alice.press(answer, REGENERATE_LABEL)
        await world.actor(BOB, BOB_DM).say("echo: a gory fox")

        assert len(world.chat_bodies()) == calls, "nothing asked again"
        [regenerated] = world.platform.ephemerals_for(ALICE.id)
        [typed] = world.platform.ephemerals_for(BOB.id)
        assert "**gore**" in regenerated and "1st" in regenerated
        assert untimed(regenerated) == untimed(typed), "the same refusal as the message typed"
        assert await world.store.moderation.banned_until("fake", ALICE.id) is not None
        turns = await world.store.conversations.conversation_tail(1, max_tokens=10**9)
        assert [t.state for t in turns] == [None, None], "the answer is not replaced"
        assert world.platform.messages[answer.ref.message_id].text == shown


async def test_only_the_user_answered_may_stop_or_regenerate(tmp_path: Path) -> None:
    async with chat_world(tmp_path) as world:
        await world.actor().say("echo: mine", mention=True, place=DM)
        answer = answer_in(world, REGENERATE_LABEL)
        assert answer is not None
        admin = User("root", "Root", is_admin=True)
        await world.actor(BOB, DM).press(answer, REGENERATE_LABEL)
        assert "Only the person this answer is for" in world.platform.ephemerals[-1].text
        calls = len(world.chat_bodies())
        await world.actor(admin, DM).press(answer, REGENERATE_LABEL)
        assert len(world.chat_bodies()) == calls + 1


async def test_feedback_is_stored_counted_and_shown_to_admins(tmp_path: Path) -> None:
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        await alice.say("echo: rate me")
        answer = answer_in(world, GOOD_LABEL)
        assert answer is not None
        model = world.chat_bodies()[-1]["model"]
        good = metrics.CHAT_FEEDBACK.labels("fake", model, "good")
        before = good._value.get()
        await alice.press(answer, GOOD_LABEL)
        await alice.press(answer, BAD_LABEL)
        await world.actor(BOB, DM).press(answer, GOOD_LABEL)
        assert good._value.get() == before + 2
        counts = await world.store.feedback.counts("fake", "w1")
        assert [(c.model, c.good, c.bad) for c in counts] == [(model, 1, 1)]
        await world.actor(User("root", "Root", is_admin=True)).command("usage")
        assert f"{model}: 1 / 1, 50%" in world.platform.ephemerals[-1].text
        await alice.command("usage")
        assert "Answer feedback" not in world.platform.ephemerals[-1].text


def styles(message: PostedMessage) -> list[tuple[str, str]]:
    return [(button.label, button.style) for button in message.buttons]


async def test_a_newer_answer_takes_regenerate_off_the_one_before_keeping_its_rating(
    tmp_path: Path,
) -> None:
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        await alice.say("echo: first")
        first = answer_in(world, REGENERATE_LABEL)
        assert first is not None
        await alice.press(first, GOOD_LABEL)
        shown, writes = first.text, len(first.history)
        await alice.say("echo: second")
        second = answer_in(world, REGENERATE_LABEL)
        assert second is not None and second is not first
        assert first.text == shown and len(first.history) == writes + 1
        assert styles(first) == [(GOOD_LABEL, "primary"), (BAD_LABEL, "secondary")]

        writes, second_writes = len(first.history), len(second.history)
        await alice.press(second, REGENERATE_LABEL)
        third = answer_in(world, REGENERATE_LABEL)
        assert third is not None and third is not second
        assert not second.buttons and len(second.history) == second_writes + 1, (
            "the replaced answer is edited once, its controls gone"
        )
        assert len(first.history) == writes

        await world.restart()
        await world.actor().say("echo: after a restart")
        assert [b.label for b in third.buttons] == [GOOD_LABEL, BAD_LABEL]
        newest = answer_in(world, REGENERATE_LABEL)
        assert newest is not None and "after a restart" in newest.text


async def test_the_answer_before_keeps_its_text_when_it_took_several_messages(
    tmp_path: Path,
) -> None:
    words = " ".join(f"word{number}" for number in range(700))
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        await alice.say(f"echo: {words}")
        parts = world.posted_in(DM)
        assert len(parts) >= 3
        shown = [(part.text, len(part.history)) for part in parts]
        await alice.say("echo: short")
        assert [(part.text, len(part.history)) for part in parts[:-1]] == shown[:-1]
        assert (parts[-1].text, len(parts[-1].history)) == (shown[-1][0], shown[-1][1] + 1)
        assert [b.label for b in parts[-1].buttons] == [GOOD_LABEL, BAD_LABEL]


async def test_a_rating_shows_on_the_buttons_and_the_same_press_again_changes_nothing(
    tmp_path: Path,
) -> None:
    async with chat_world(tmp_path) as world:
        alice, bob = world.actor(), world.actor(BOB, DM)
        await alice.say("echo: rate me twice")
        answer = answer_in(world, GOOD_LABEL)
        assert answer is not None
        model = world.chat_bodies()[-1]["model"]
        good = metrics.CHAT_FEEDBACK.labels("fake", model, "good")
        counted, writes = good._value.get(), len(answer.history)
        told = len(world.platform.ephemerals)

        await alice.press(answer, GOOD_LABEL)
        await alice.press(answer, GOOD_LABEL)
        assert styles(answer) == [
            (REGENERATE_LABEL, "secondary"),
            (GOOD_LABEL, "primary"),
            (BAD_LABEL, "secondary"),
        ]
        assert len(answer.history) == writes + 1 and len(world.platform.ephemerals) == told
        assert good._value.get() == counted + 1

        await alice.press(answer, BAD_LABEL)
        assert styles(answer)[1:] == [(GOOD_LABEL, "secondary"), (BAD_LABEL, "primary")]
        assert answer.text.endswith("rate me twice")
        counts = await world.store.feedback.counts("fake", "w1")
        assert [(c.good, c.bad) for c in counts] == [(0, 1)]

        await bob.press(answer, GOOD_LABEL)
        await bob.press(answer, GOOD_LABEL)
        assert world.platform.ephemerals_for(BOB.id) == [f"Thanks for the feedback {GOOD_LABEL}."]
        assert styles(answer)[1:] == [(GOOD_LABEL, "secondary"), (BAD_LABEL, "primary")]
        assert len(answer.history) == writes + 2
        assert good._value.get() == counted + 2


async def test_after_a_switch_back_the_next_answer_takes_regenerate_off_the_newest_shown(
    tmp_path: Path,
) -> None:
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        first = await alice.say("echo: one")
        one = answer_in(world, REGENERATE_LABEL)
        await alice.edit(first, "echo: ONE")
        edited = answer_in(world, REGENERATE_LABEL)
        assert one is not None and edited is not None and edited is not one
        [note] = [m for m in world.posted_in(DM) if m.text.startswith("✏️")]
        await alice.press(note, "‹")
        writes = len(one.history)
        await alice.say("echo: two")
        assert [b.label for b in edited.buttons] == [GOOD_LABEL, BAD_LABEL], (
            "the answer shown last, now on a set-aside branch, loses 🔁"
        )
        assert len(one.history) == writes, "the live branch's older answer is not drawn again"
