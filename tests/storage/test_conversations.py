"""Conversations: scoping keys, reply-chain lookup by any linked message, ordered history."""

from __future__ import annotations

from typing import Any

import pytest

from storage import ConversationKey, StorageError, Store
from tests.storage.conftest import START, ManualClock
from tests.storage.helpers import conversation_history

THREAD = ConversationKey("slack", "T1", "C1", "1700000000.000100")


async def test_get_or_create_returns_the_same_conversation(store: Store) -> None:
    created, was_created = await store.conversations.get_or_create_conversation(
        THREAD, kind="thread", created_by="U1"
    )
    again, created_again = await store.conversations.get_or_create_conversation(
        THREAD, kind="reply_chain", created_by="U2"
    )
    assert was_created and not created_again
    assert again == created
    assert (again.kind, again.created_by, again.key) == ("thread", "U1", THREAD)
    assert await store.conversations.find_conversation(THREAD) == created
    assert await store.conversations.get_conversation(created.id) == created
    assert await store.conversations.find_conversation(ConversationKey("slack", "T1", "C1")) is None
    with pytest.raises(StorageError, match="kind"):
        await store.conversations.get_or_create_conversation(THREAD, kind="group")  # type: ignore[arg-type]


async def test_a_dm_and_threads_of_one_channel_are_separate(store: Store) -> None:
    dm, _ = await store.conversations.get_or_create_conversation(
        ConversationKey("discord", "", "dm1"), kind="dm"
    )
    one, _ = await store.conversations.get_or_create_conversation(
        ConversationKey("discord", "g", "c", "root-1"), kind="reply_chain"
    )
    two, _ = await store.conversations.get_or_create_conversation(
        ConversationKey("discord", "g", "c", "root-2"), kind="reply_chain"
    )
    assert len({dm.id, one.id, two.id}) == 3


async def test_a_reply_to_any_message_of_a_chain_finds_the_conversation(store: Store) -> None:
    key = ConversationKey("discord", "g", "c", "m-user-1")
    conversation, _ = await store.conversations.get_or_create_conversation(key, kind="reply_chain")
    await store.conversations.append_message(
        conversation.id, "user", "hi", platform_message_ids=["m-user-1"]
    )
    answer = await store.conversations.append_message(
        conversation.id, "assistant", "long answer", platform_message_ids=["m-bot-1"]
    )
    await store.conversations.link_conversation_messages(
        conversation.id, ["m-bot-2", "m-bot-3"], chat_message_id=answer
    )
    for message_id in ("m-user-1", "m-bot-1", "m-bot-3"):
        found = await store.conversations.find_conversation_by_message("discord", "c", message_id)
        assert found is not None and found.id == conversation.id
    assert await store.conversations.find_conversation_by_message("discord", "c", "m-other") is None
    assert (
        await store.conversations.find_conversation_by_message("discord", "c2", "m-bot-1") is None
    )
    history = await conversation_history(store.conversations, conversation.id)
    assert [m.platform_message_ids for m in history] == [
        ("m-user-1",),
        ("m-bot-1", "m-bot-2", "m-bot-3"),
    ]


async def test_history_is_ordered_typed_and_api_shaped(store: Store, clock: ManualClock) -> None:
    conversation, _ = await store.conversations.get_or_create_conversation(THREAD, kind="thread")
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "https://cdn/x.png"}},
    ]
    call = {"name": "generate_image", "arguments": '{"prompt": "a fox"}'}
    await store.conversations.append_message(conversation.id, "system", "be brief", token_count=3)
    clock.advance(1)
    await store.conversations.append_message(conversation.id, "user", parts=parts, token_count=90)
    await store.conversations.append_message(
        conversation.id, "assistant", function_call=call, token_count=12
    )
    await store.conversations.append_message(
        conversation.id, "function", '{"job": "abc"}', name="generate_image", token_count=5
    )
    history = await conversation_history(store.conversations, conversation.id)
    assert [m.role for m in history] == ["system", "user", "assistant", "function"]
    assert [m.token_count for m in history] == [3, 90, 12, 5]
    assert history[0].created_at == START and history[1].created_at == START + 1
    assert [(m.content, m.parts, m.function_call, m.name) for m in history] == [
        ("be brief", None, None, None),
        (None, parts, None, None),
        (None, None, call, None),
        ('{"job": "abc"}', None, None, "generate_image"),
    ]
    refreshed = await store.conversations.get_conversation(conversation.id)
    assert refreshed is not None and refreshed.updated_at == START + 1


async def test_bad_messages_are_refused(store: Store) -> None:
    conversation, _ = await store.conversations.get_or_create_conversation(THREAD, kind="thread")
    with pytest.raises(StorageError, match="name"):
        await store.conversations.append_message(conversation.id, "function", "{}")
    with pytest.raises(StorageError, match="role"):
        await store.conversations.append_message(conversation.id, "robot", "x")  # type: ignore[arg-type]
    with pytest.raises(StorageError, match="no conversation"):
        await store.conversations.append_message(999, "user", "x")
    other, _ = await store.conversations.get_or_create_conversation(
        ConversationKey("slack", "T1", "C9"), kind="dm"
    )
    foreign = await store.conversations.append_message(other.id, "user", "elsewhere")
    with pytest.raises(StorageError, match="not in conversation"):
        await store.conversations.link_conversation_messages(
            conversation.id, ["m1"], chat_message_id=foreign
        )


async def test_update_a_turn_and_the_conversation_overrides(store: Store) -> None:
    conversation, _ = await store.conversations.get_or_create_conversation(THREAD, kind="thread")
    turn = await store.conversations.append_message(conversation.id, "assistant", "", token_count=0)
    assert await store.conversations.update_message(turn, content="final text", token_count=2)
    assert not await store.conversations.update_message(12345, content="x")
    [stored] = await conversation_history(store.conversations, conversation.id)
    assert (stored.content, stored.token_count) == ("final text", 2)

    assert await store.conversations.update_conversation(
        conversation.id, model="llm-4", system_prompt="pirate"
    )
    assert await store.conversations.update_conversation(conversation.id, system_prompt=None)
    updated = await store.conversations.get_conversation(conversation.id)
    assert updated is not None
    assert (updated.model, updated.system_prompt) == ("llm-4", None)
    assert not await store.conversations.update_conversation(999, model="llm-4")


async def test_the_tail_holds_what_fits_by_stored_counts(store: Store) -> None:
    conversation, _ = await store.conversations.get_or_create_conversation(THREAD, kind="thread")
    other, _ = await store.conversations.get_or_create_conversation(
        ConversationKey("slack", "T1", "C1", "other"), kind="thread"
    )
    call = {"name": "generate_image", "arguments": "{}"}
    turns: list[tuple[str, str | None, int]] = [
        ("user", "u1", 10),
        ("assistant", "a1", 10),
        ("user", "u2", 10),
        ("assistant", "a2", 10),
        ("user", "u3", 50),
    ]
    for number, (role, content, tokens) in enumerate(turns):
        await store.conversations.append_message(
            conversation.id,
            role,  # type: ignore[arg-type]
            content,
            token_count=tokens,
            platform_message_ids=[f"m{number}"],
        )
        await store.conversations.append_message(
            other.id, "user", f"elsewhere {number}", token_count=1
        )
    await store.conversations.append_message(
        conversation.id, "assistant", function_call=call, token_count=5
    )
    await store.conversations.append_message(
        conversation.id, "function", "ok", name="generate_image", token_count=5
    )

    async def tail(budget: int) -> list[str | None]:
        found = await store.conversations.conversation_tail(conversation.id, max_tokens=budget)
        return [m.content for m in found]

    assert await tail(0) == ["u3", None, "ok"], "the newest user turn on is always kept"
    assert await tail(69) == ["u3", None, "ok"]
    assert await tail(70) == ["a2", "u3", None, "ok"]
    assert await tail(80) == ["u2", "a2", "u3", None, "ok"]
    assert await tail(10_000) == ["u1", "a1", "u2", "a2", "u3", None, "ok"]
    everything = await store.conversations.conversation_tail(conversation.id, max_tokens=80)
    assert [m.platform_message_ids for m in everything] == [("m2",), ("m3",), ("m4",), (), ()]
    assert everything == (await conversation_history(store.conversations, conversation.id))[2:]
    assert await store.conversations.conversation_tail(999, max_tokens=100) == []


async def test_the_tail_without_a_user_turn_keeps_the_newest(store: Store) -> None:
    conversation, _ = await store.conversations.get_or_create_conversation(THREAD, kind="thread")
    await store.conversations.append_message(conversation.id, "assistant", "old", token_count=30)
    await store.conversations.append_message(conversation.id, "assistant", "new", token_count=30)
    found = await store.conversations.conversation_tail(conversation.id, max_tokens=10)
    assert [m.content for m in found] == ["new"]


async def test_deleting_a_turn_keeps_its_messages_linked(store: Store) -> None:
    key = ConversationKey("discord", "g", "c", "root")
    conversation, _ = await store.conversations.get_or_create_conversation(key, kind="reply_chain")
    await store.conversations.append_message(conversation.id, "user", "hi")
    answer = await store.conversations.append_message(
        conversation.id, "assistant", "", platform_message_ids=["m-bot"]
    )
    assert await store.conversations.delete_message(answer)
    assert not await store.conversations.delete_message(answer)
    assert [
        m.content for m in await conversation_history(store.conversations, conversation.id)
    ] == ["hi"]
    found = await store.conversations.find_conversation_by_message("discord", "c", "m-bot")
    assert found is not None and found.id == conversation.id


async def test_the_answer_before_a_turn_with_the_turns_after_it(store: Store) -> None:
    conversations = store.conversations
    conversation, _ = await conversations.get_or_create_conversation(THREAD, kind="thread")
    first = await conversations.append_message(conversation.id, "user", "hi")
    assert await conversations.answer_before(conversation.id, first + 1) == []
    answer = await conversations.append_message(
        conversation.id, "assistant", "a", platform_message_ids=["m1", "m2"]
    )
    await conversations.append_message(conversation.id, "assistant", "a", name="alternative")
    call = {"name": "generate_image", "arguments": "{}"}
    await conversations.append_message(conversation.id, "assistant", None, function_call=call)
    await conversations.append_message(conversation.id, "function", "ok", name="generate_image")
    newer = await conversations.append_message(
        conversation.id, "assistant", "b", platform_message_ids=["m3"]
    )
    turns = await conversations.answer_before(conversation.id, newer)
    assert [(t.id, t.platform_message_ids) for t in turns[:1]] == [(answer, ("m1", "m2"))]
    assert [t.name for t in turns] == [None, "alternative", None, "generate_image", None]
    assert [t.id for t in await conversations.answer_before(conversation.id, newer, turns=2)] == [
        answer,
        answer + 1,
    ]
    assert (await conversations.answer_before(conversation.id, newer + 1))[0].id == newer


async def test_a_user_turn_stored_streaming_is_found_until_it_is_done(store: Store) -> None:
    conversation, _ = await store.conversations.get_or_create_conversation(THREAD, kind="thread")
    asked = await store.conversations.append_message(
        conversation.id, "user", "hello", author="U1", state="streaming"
    )
    assert await store.conversations.streaming_answers(10) == [(conversation.id, asked)]
    turn = await store.conversations.get_turn(conversation.id, asked)
    assert turn is not None and (turn.state, turn.author) == ("streaming", "U1")
    await store.conversations.update_message(asked, state=None)
    assert await store.conversations.streaming_answers(10) == []
    with pytest.raises(StorageError, match="answer state"):
        await store.conversations.append_message(conversation.id, "user", "x", state="late")  # type: ignore[arg-type]
