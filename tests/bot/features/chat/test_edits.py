"""Editing one's message in a conversation: the conversation branches there, the new text is
answered, the history keeps both branches and the next turn continues the live one; ‹ and › on
the note under the edit switch the live branch."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.features.chat.branching import QUOTE_MAX
from bot.features.chat.engine import EDIT_CONFLICT
from tests.bot.features.chat.support import ALICE, DM, chat_world


async def test_an_edit_branches_and_the_next_turn_continues_the_new_branch(
    tmp_path: Path,
) -> None:
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        await alice.say("echo: one")
        second = await alice.say("echo: two")
        await alice.say("echo: three")
        await alice.edit(second, "echo: TWO")
        assert world.texts_in(DM)[-1] == "TWO"
        sent = world.chat_bodies()[-1]["messages"]
        assert [m["content"] for m in sent if m["role"] != "system"] == [
            "echo: one",
            "one",
            "echo: TWO",
        ]
        await alice.say("echo: four")
        sent = world.chat_bodies()[-1]["messages"]
        assert [m["content"] for m in sent if m["role"] != "system"] == [
            "echo: one",
            "one",
            "echo: TWO",
            "TWO",
            "echo: four",
        ]
        store = world.store
        [fork] = await store.branches.forks(1)
        assert fork.live == 2 and len(fork.first_turns) == 2
        rows = await store.db.fetch_all(
            "SELECT content, branch, author FROM messages WHERE conversation_id = 1 ORDER BY id"
        )
        kept = [r["content"] for r in rows if r["branch"] is not None]
        assert kept == ["echo: two", "two", "echo: three", "three"], "the old branch is kept"
        edited = next(r for r in rows if r["content"] == "echo: TWO")
        assert edited["author"] == "alice", "the edit is its author's turn"

        [note] = [m for m in world.posted_in(DM) if m.text.startswith("✏️")]
        assert note.text.startswith("✏️ Version 2 of 2")
        assert [(b.label, b.disabled) for b in note.buttons] == [
            ("‹", False),
            ("2/2", True),
            ("›", True),
        ]
        await alice.press(note, "‹")
        assert note.text.splitlines()[0] == (
            "✏️ Version 1 of 2 of your message, “echo: two”: the conversation continues from it."
        ), "the message above the note reads version 2: the note says what version 1 said"
        await alice.say("echo: five")
        sent = world.chat_bodies()[-1]["messages"]
        assert [m["content"] for m in sent if m["role"] != "system"][-3:] == [
            "echo: three",
            "three",
            "echo: five",
        ]
        await alice.press(note, "›")
        assert note.text.splitlines() == [
            "✏️ Version 2 of 2 of your message, “echo: TWO”: the conversation continues from it.",
            "Version 1 and the 5 messages after it stay in the channel but are no longer part of "
            "the conversation.",
        ]


async def test_a_switch_says_which_turns_it_leaves_out(tmp_path: Path) -> None:
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        first = await alice.say("echo: one")
        await alice.edit(first, "echo: ONE")
        [note] = [m for m in world.posted_in(DM) if m.text.startswith("✏️")]
        assert len(note.text.splitlines()) == 1
        await alice.press(note, "‹")
        assert note.text.splitlines()[1:] == [
            "Version 2 and the 1 message after it stay in the channel but are no longer part of "
            "the conversation."
        ]


async def test_a_switch_quotes_a_long_version_on_one_line_shortened(tmp_path: Path) -> None:
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        long = "echo: " + "a lighthouse\n\n at dusk, " * 20
        first = await alice.say(long)
        await alice.edit(first, "echo: short")
        [note] = [m for m in world.posted_in(DM) if m.text.startswith("✏️")]
        await alice.press(note, "‹")
        head = note.text.splitlines()[0]
        quote = head[head.index("“") + 1 : head.index("”")]
        assert quote.startswith("echo: a lighthouse at dusk, a lighthouse") and "\n" not in quote
        assert quote.endswith("…") and len(quote) == QUOTE_MAX


async def test_edits_that_are_not_turns_change_nothing(tmp_path: Path) -> None:
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        first = await alice.say("echo: one")
        calls = len(world.chat_bodies())
        await alice.edit(first, "echo: one")
        await alice.edit("u-unknown", "echo: who")
        assert len(world.chat_bodies()) == calls


async def test_quick_edits_of_one_message_are_answered_in_turn_and_the_last_one_stays(
    tmp_path: Path,
) -> None:
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        base = await alice.say("echo: race base")

        await asyncio.gather(*(alice.edit(base, f"echo: edit {n}") for n in range(3)))

        assert world.platform.ephemerals_for(ALICE.id) == [], "no edit refused"
        [fork] = await world.store.branches.forks(1)
        assert (fork.live, len(fork.first_turns)) == (4, 4), "each edit a version"
        sent = world.chat_bodies()[-1]["messages"]
        assert [m["content"] for m in sent if m["role"] != "system"] == ["echo: edit 2"]
        assert world.texts_in(DM)[-1] == "edit 2"
        await alice.say("echo: after")
        sent = world.chat_bodies()[-1]["messages"]
        assert [m["content"] for m in sent if m["role"] != "system"] == [
            "echo: edit 2",
            "edit 2",
            "echo: after",
        ]


async def test_an_edit_waiting_while_another_version_is_chosen_is_told_so(
    tmp_path: Path,
) -> None:
    async with chat_world(tmp_path) as world:
        alice = world.actor()
        base = await alice.say("echo: one")
        await alice.edit(base, "echo: two")
        [fork] = await world.store.branches.forks(1)
        lock = world.engine.turn_lock(1)
        async with lock:
            editing = asyncio.create_task(alice.edit(base, "echo: three"))
            async with asyncio.timeout(10):
                while not lock._waiters:  # noqa: ASYNC110 - an asyncio.Lock tells no event
                    await asyncio.sleep(0.01)
            assert await world.store.branches.switch(1, fork.fork_turn, 1)
        await asyncio.wait_for(editing, 10)

        assert world.platform.ephemerals_for(ALICE.id) == [EDIT_CONFLICT]
        [fork] = await world.store.branches.forks(1)
        assert (fork.live, len(fork.first_turns)) == (1, 2), "no version added"
