"""What reaches the provider: trimmed history with the system prompt, the channel's system
prompt, the user's model, and the plan rule applied before anything is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.features.chat import DEFAULT_SYSTEM_PROMPT, ChatDefaults
from bot.features.chat.tokens import CONTEXT_SIZES, count_functions, count_message, count_messages
from storage import ChatRole, ConversationKey
from tests.bot.features.chat.support import ALICE, BOB, BOB_DM, CHANNEL, DM, ChatWorld, chat_world
from tests.storage.helpers import conversation_history

FILLER = "The quick brown fox jumps over the lazy dog while the band plays on. " * 8


async def test_long_history_is_trimmed_but_the_system_prompt_stays(world: ChatWorld) -> None:
    key = ConversationKey("fake", DM.workspace_id, DM.channel_id, "")
    conversation, _ = await world.store.conversations.get_or_create_conversation(key, kind="dm")
    for number in range(120):
        role: ChatRole = "user" if number % 2 == 0 else "assistant"
        await world.store.conversations.append_message(
            conversation.id, role, f"turn {number}: {FILLER}"
        )
    await world.actor().say("echo: still here")
    assert world.texts_in(DM) == ["still here"]
    body = world.chat_bodies()[-1]
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": DEFAULT_SYSTEM_PROMPT}
    assert messages[1]["role"] == "user"
    assert messages[-1] == {"role": "user", "content": "echo: still here"}
    assert not any(m["content"].startswith("turn 0:") for m in messages)
    assert any(m["content"].startswith("turn 119:") for m in messages)
    used = count_messages(messages) + count_functions(body.get("functions") or [])
    limit = CONTEXT_SIZES[body["model"]]
    assert limit - 1024 - 200 < used <= limit - 1024


async def test_a_message_too_long_for_the_model_is_refused(world: ChatWorld) -> None:
    await world.actor().say("word " * 5000)
    (refusal,) = world.platform.ephemerals_for("alice")
    assert "too long for llm-3.5-turbo" in refusal
    assert world.chat_bodies() == []
    conversation = await world.store.conversations.find_conversation(
        ConversationKey("fake", DM.workspace_id, DM.channel_id, "")
    )
    assert conversation is not None
    assert await conversation_history(world.store.conversations, conversation.id) == []


async def test_the_channel_system_prompt_reaches_the_provider(world: ChatWorld) -> None:
    await world.actor(ALICE, CHANNEL).command("settings", system_prompt="You answer in haiku.")
    await world.actor(BOB, CHANNEL).say("echo: hi", mention=True)
    assert world.chat_bodies()[-1]["messages"][0] == {
        "role": "system",
        "content": "You answer in haiku.",
    }
    await world.actor(BOB, BOB_DM).say("echo: hi")
    assert world.chat_bodies()[-1]["messages"][0]["content"] == DEFAULT_SYSTEM_PROMPT


async def test_the_model_is_chosen_per_user(world: ChatWorld) -> None:
    await world.actor().command("settings", model="llm-4-1106-preview", temperature=0.3)
    await world.actor().say("echo: a")
    await world.actor(BOB, BOB_DM).say("echo: b")
    alice_body, bob_body = world.chat_bodies()
    assert (alice_body["model"], alice_body["temperature"]) == ("llm-4-1106-preview", 0.3)
    assert bob_body["model"] == "llm-3.5-turbo" and "temperature" not in bob_body


async def test_llm_4_on_the_free_plan_is_refused_before_sending(tmp_path: Path) -> None:
    async with chat_world(tmp_path, plan="free") as world:
        alice = world.actor(ALICE, CHANNEL)
        await alice.command("chat", prompt="echo: hi", model="llm-4")
        await world.store.settings.set_scope_settings("user", "fake", "alice", model="llm-4-0613")
        await world.actor().say("echo: hi")
        await alice.say("echo: hi", mention=True)
        thread = CHANNEL.in_thread("t-team")
        await alice.say("echo: hi", place=thread, mention=True)
        await world.actor(BOB, CHANNEL).say("echo: hi", place=thread)
        chat_refusal, dm_refusal, mention_refusal, thread_refusal = world.platform.ephemerals_for(
            "alice"
        )
        assert thread_refusal == mention_refusal
        assert "You asked for llm-4, which needs the Developer plan" in chat_refusal
        assert "Your default model is llm-4-0613" in dm_refusal
        for refusal in (chat_refusal, dm_refusal, mention_refusal):
            assert "`/settings` model" in refusal and "llm-3.5-turbo" in refusal
        assert world.chat_bodies() == []
        assert world.platform.messages == {} and world.platform.threads == []
        await world.actor(BOB, BOB_DM).say("echo: free models work")
        assert world.texts_in(BOB_DM) == ["free models work"]


async def test_stored_token_counts_decide_what_fits(world: ChatWorld) -> None:
    key = ConversationKey("fake", DM.workspace_id, DM.channel_id, "")
    conversation, _ = await world.store.conversations.get_or_create_conversation(key, kind="dm")
    turns: list[tuple[ChatRole, str, int | None]] = [
        ("user", "echo: zero", 3000),
        ("assistant", "zero", None),
        ("user", "echo: one", None),
        ("assistant", "one", None),
    ]
    for role, content, stored in turns:
        exact = count_message({"role": role, "content": content})
        await world.store.conversations.append_message(
            conversation.id, role, content, token_count=stored or exact
        )
    await world.actor().say("echo: two")
    sent = [m["content"] for m in world.chat_bodies()[-1]["messages"][1:]]
    assert sent == ["echo: one", "one", "echo: two"], "a turn stored as 3000 tokens cannot fit"


async def test_history_is_read_once_per_message_and_only_its_tail(world: ChatWorld) -> None:
    key = ConversationKey("fake", DM.workspace_id, DM.channel_id, "")
    conversation, _ = await world.store.conversations.get_or_create_conversation(key, kind="dm")
    first_id = 0
    for number in range(80):
        role: ChatRole = "user" if number % 2 == 0 else "assistant"
        content = f"turn {number}: {FILLER}"
        turn_id = await world.store.conversations.append_message(
            conversation.id,
            role,
            content,
            token_count=count_message({"role": role, "content": content}),
        )
        first_id = first_id or turn_id
    statements: list[str] = []
    await world.store.db.run(lambda db: db.conn.set_trace_callback(statements.append))
    try:
        await world.actor().say("draw a harbour at dawn")
    finally:
        await world.store.db.run(lambda db: db.conn.set_trace_callback(None))
    assert [body.get("functions") is not None for body in world.chat_bodies()] == [True, True]
    reads = [s for s in statements if s.startswith("SELECT * FROM messages")]
    prefix = f"SELECT * FROM messages WHERE conversation_id = {conversation.id} AND id >= "
    assert len(reads) == 1 and reads[0].startswith(prefix), reads
    oldest_read = int(reads[0].removeprefix(prefix).split()[0])
    assert oldest_read > first_id + 40, "only the turns that can fit are read"
    sent = world.chat_bodies()[0]["messages"]
    oldest_sent = int(sent[1]["content"].removeprefix("turn ").split(":")[0])
    assert oldest_read - first_id <= oldest_sent <= oldest_read - first_id + 3


async def test_logit_bias_from_the_configuration_reaches_the_provider(tmp_path: Path) -> None:
    defaults = ChatDefaults(logit_bias={"1734": -100, "50256": 5.5})
    async with chat_world(tmp_path, defaults=defaults) as world:
        await world.actor().say("echo: biased")
        assert world.chat_bodies()[-1]["logit_bias"] == {"1734": -100, "50256": 5.5}
        assert world.texts_in(DM) == ["biased"]
    with pytest.raises(ValueError, match="token ids"):
        ChatDefaults(logit_bias={"hello": 1})
    with pytest.raises(ValueError, match=r"-100\.\.100"):
        ChatDefaults(logit_bias={"1": 101})
