"""Ratings of chat answers: one per user and answer (the newest counts), counted per model in a
workspace; gone with their turn."""

from __future__ import annotations

from storage import ConversationKey, Store


async def test_one_rating_per_user_and_answer_counted_per_model(store: Store) -> None:
    key = ConversationKey("slack", "T1", "D1")
    conversation, _ = await store.conversations.get_or_create_conversation(key, kind="dm")
    turns = [
        await store.conversations.append_message(conversation.id, "assistant", text, model=model)
        for text, model in (("a", "llm-4"), ("b", "llm-3.5-turbo"))
    ]
    where = {"platform": "slack", "workspace_id": "T1"}
    await store.feedback.rate(turns[0], "U1", model="llm-4", good=True, **where)
    await store.feedback.rate(turns[0], "U1", model="llm-4", good=False, **where)
    await store.feedback.rate(turns[0], "U2", model="llm-4", good=True, **where)
    await store.feedback.rate(turns[1], "U1", model="llm-3.5-turbo", good=True, **where)
    await store.feedback.rate(turns[1], "U1", model="llm-3.5-turbo", good=True, platform="slack",
                              workspace_id="T2")  # fmt: skip
    counts = await store.feedback.counts("slack", "T1")
    assert [(c.model, c.good, c.bad) for c in counts] == [("llm-3.5-turbo", 1, 0), ("llm-4", 1, 1)]
    assert await store.feedback.counts("discord", "T1") == []
    await store.conversations.delete_message(turns[0])
    counts = await store.feedback.counts("slack", "T1")
    assert [c.model for c in counts] == ["llm-3.5-turbo"]


async def test_a_turn_keeps_its_model_who_it_was_for_and_its_state(store: Store) -> None:
    key = ConversationKey("discord", "G1", "C1", "t1")
    conversation, _ = await store.conversations.get_or_create_conversation(key, kind="thread")
    turn = await store.conversations.append_message(
        conversation.id, "assistant", "hi", model="llm-4", asked_by="U7"
    )
    await store.conversations.update_message(turn, state="stopped")
    stored = await store.conversations.get_turn(conversation.id, turn)
    assert stored is not None
    assert (stored.model, stored.asked_by, stored.state) == ("llm-4", "U7", "stopped")
    assert await store.conversations.get_turn(conversation.id + 1, turn) is None


async def test_a_rating_given_again_changes_nothing_and_reads_back(store: Store) -> None:
    key = ConversationKey("slack", "T1", "D1")
    conversation, _ = await store.conversations.get_or_create_conversation(key, kind="dm")
    turn = await store.conversations.append_message(conversation.id, "assistant", "a")
    where = {"platform": "slack", "workspace_id": "T1", "model": "llm-4"}
    assert await store.feedback.rating(turn, "U1") is None
    assert await store.feedback.rate(turn, "U1", good=True, **where)
    assert not await store.feedback.rate(turn, "U1", good=True, **where)
    assert await store.feedback.rating(turn, "U1") is True
    assert await store.feedback.rate(turn, "U1", good=False, **where)
    assert await store.feedback.rating(turn, "U1") is False
    assert await store.feedback.rating(turn, "U2") is None
