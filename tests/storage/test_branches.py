"""A conversation's branches: an edited turn starts a branch at its fork, the turns after it are
set aside and kept, the history reads the live branch, and any branch can be made live again
(nested forks keep their own state)."""

from __future__ import annotations

from storage import ConversationKey, Fork, StorageError, Store


async def live(store: Store, conversation_id: int) -> list[str | None]:
    turns = await store.conversations.conversation_tail(conversation_id, max_tokens=10**9)
    return [turn.content for turn in turns]


async def test_edits_branch_and_switching_brings_a_branch_back(store: Store) -> None:
    key = ConversationKey("discord", "G1", "D1")
    conversation, _ = await store.conversations.get_or_create_conversation(key, kind="dm")
    cid = conversation.id

    async def say(*texts: str) -> list[int]:
        return [
            await store.conversations.append_message(cid, "user" if i % 2 == 0 else "assistant", t)
            for i, t in enumerate(texts)
        ]

    u1, _, u3 = await say("u1", "a1", "u3")
    call = {"name": "generate_image", "arguments": "{}"}
    await store.conversations.append_message(cid, "assistant", None, function_call=call)
    await store.conversations.append_message(cid, "assistant", "a3")
    u5 = await store.branches.edit(cid, u3, "u3'", platform_message_ids=["m3"])
    await store.conversations.append_message(cid, "assistant", "a3'")
    assert await live(store, cid) == ["u1", "a1", "u3'", "a3'"]
    assert await store.conversations.turn_of_message("discord", "D1", "m3") == u5
    assert await store.branches.forks(cid) == [Fork(u3, (u3, u5), 2)]
    assert await store.branches.shown_after(cid, u3) == 1, "a3 (not the call before it)"

    u7 = await store.branches.edit(cid, u5, "u3''")
    assert await live(store, cid) == ["u1", "a1", "u3''"]
    assert await store.branches.forks(cid) == [Fork(u3, (u3, u5, u7), 3)]

    assert await store.branches.switch(cid, u3, 2)
    assert await live(store, cid) == ["u1", "a1", "u3'", "a3'"]
    assert await store.branches.shown_after(cid, u7) == 0
    assert await store.branches.shown_after(cid, u5) == 0, "a3' is live again"
    u9 = await store.branches.edit(cid, u1, "u1'")
    assert await live(store, cid) == ["u1'"]
    assert not await store.branches.switch(cid, u3, 1), "fork u3 is not on the live path"
    assert await store.branches.switch(cid, u1, 1)
    assert await live(store, cid) == ["u1", "a1", "u3'", "a3'"], "the nested fork kept branch 2"
    assert [f.live for f in await store.branches.forks(cid)] == [1, 2]
    assert (await store.branches.forks(cid))[0].first_turns == (u1, u9)


async def test_only_a_live_user_turn_can_be_edited(store: Store) -> None:
    key = ConversationKey("slack", "T1", "C1", "1.0")
    conversation, _ = await store.conversations.get_or_create_conversation(key, kind="thread")
    answer = await store.conversations.append_message(conversation.id, "assistant", "a")
    for turn in (answer, answer + 99):
        try:
            await store.branches.edit(conversation.id, turn, "x")
        except StorageError:
            continue
        raise AssertionError(f"turn {turn} was edited")
