"""``/chat``: in a channel it opens a thread on the question; in DMs it answers there;
``model`` and ``system`` stick to the conversation."""

from __future__ import annotations

from dataclasses import replace

from bot.api import CHAT_MODELS
from bot.features.chat import DEFAULT_SYSTEM_PROMPT, FUNCTIONS
from bot.features.chat.renderer import LENGTH_NOTE
from bot.features.chat.tokens import count_functions, count_messages
from bot.kernel import Command, MessageRef
from tests.bot.features.chat.support import ALICE, BOB, CHANNEL, DM, ChatWorld
from tests.language import german
from tests.storage.helpers import conversation_history


async def test_chat_in_a_channel_opens_a_thread_with_the_streamed_answer(world: ChatWorld) -> None:
    alice = world.actor(ALICE, CHANNEL)
    await alice.command("chat", prompt="echo: Lighthouses guide ships @here")
    (question,) = world.posted_in(CHANNEL)
    assert question.text == "**Alice** asked: echo: Lighthouses guide ships @here"
    assert question.message.mention_user_id is None and not question.message.from_model
    assert isinstance(question.origin, Command)
    ((root, title),) = world.platform.threads
    assert root == MessageRef(CHANNEL, question.ref.message_id)
    assert title == "echo: Lighthouses guide ships @here"
    thread = next(m.ref.place for m in world.platform.messages.values() if m.ref.place.thread_id)
    (answer,) = world.posted_in(thread)
    assert answer.text == "Lighthouses guide ships @here" and answer.message.from_model
    body = world.chat_bodies()[-1]
    assert body["stream"] is True
    assert answer.text == await world.replay(body)
    await world.actor(BOB, CHANNEL).say("what was my first message", place=thread)
    assert world.texts_in(thread)[-1] == (
        'Your first message was: "echo: Lighthouses guide ships @here"'
    )
    await world.actor(BOB, CHANNEL).say("echo: via the question", reply_to=question.ref.message_id)
    assert world.texts_in(thread)[-1] == "via the question"


async def test_chat_in_a_dm_answers_there_and_model_and_system_stick(world: ChatWorld) -> None:
    alice = world.actor()
    await alice.command(
        "chat",
        prompt="echo: ahoy",
        model="llm-3.5-turbo-16k",
        system="You are a pirate.",
        temperature=0.4,
    )
    assert world.texts_in(DM) == ["ahoy"]
    assert world.platform.threads == []
    first = world.chat_bodies()[-1]
    assert first["model"] == "llm-3.5-turbo-16k" and first["temperature"] == 0.4
    assert first["messages"][0] == {"role": "system", "content": "You are a pirate."}
    await alice.say("echo: still a pirate?")
    second = world.chat_bodies()[-1]
    assert second["model"] == "llm-3.5-turbo-16k"
    assert second["messages"][0]["content"] == "You are a pirate."
    assert "temperature" not in second
    await world.actor(BOB, CHANNEL).say("echo: elsewhere", mention=True)
    third = world.chat_bodies()[-1]
    assert third["model"] == "llm-3.5-turbo"
    assert third["messages"][0]["content"] == DEFAULT_SYSTEM_PROMPT


async def test_text_style_chat_command(world: ChatWorld) -> None:
    await world.actor().command("chat", "echo: from slack --temp 0.2 --model llm-3.5-turbo-1106")
    assert world.texts_in(DM) == ["from slack"]
    body = world.chat_bodies()[-1]
    assert body["model"] == "llm-3.5-turbo-1106" and body["temperature"] == 0.2


async def test_max_tokens_cut_is_marked_and_stored(world: ChatWorld) -> None:
    await world.actor().command("chat", prompt="words: 300", max_tokens=12)
    (answer,) = world.posted_in(DM)
    assert answer.text.endswith(LENGTH_NOTE)
    body = world.chat_bodies()[-1]
    assert body["max_tokens"] == 12
    full = await world.replay(body)
    assert answer.text == f"{full.rstrip()}\n\n{LENGTH_NOTE}"
    conversation = await world.store.conversations.find_conversation_by_message(
        "fake", DM.channel_id, answer.ref.message_id
    )
    assert conversation is not None
    history = await conversation_history(world.store.conversations, conversation.id)
    assert history[-1].content == answer.text


async def test_bad_chat_options_never_reach_the_provider(world: ChatWorld) -> None:
    alice = world.actor()
    await alice.command("chat", prompt="hi", temperature=3)
    await alice.command("chat", prompt="hi", model="gpt-9")
    first, second = world.platform.ephemerals_for("alice")
    assert "temperature" in first and "at most 2" in first
    assert "model must be one of" in second
    assert world.chat_bodies() == []


async def test_the_services_rules_refuse_in_the_users_language(world: ChatWorld) -> None:
    """A value only the provider's rules refuse (bot/api's checks, not /chat's options) is
    refused in the user's language."""
    await replace(world.actor(), locale="de").command("chat", prompt="hi", model="gpt-9")
    (refusal,) = world.platform.ephemerals_for("alice")
    expected = german(
        "{field} must be one of {expected} (got {got})",
        field="model",
        expected=", ".join(CHAT_MODELS),
        got="'gpt-9'",
    )
    assert refusal.removesuffix(".") == expected
    assert world.chat_bodies() == []


async def test_max_tokens_beyond_the_context_names_the_largest_usable_value(
    world: ChatWorld,
) -> None:
    alice = world.actor()
    await alice.command("chat", prompt="echo: hi", max_tokens=100000)
    await alice.command("chat", prompt="echo: hi", max_tokens=4000)
    prompt = [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": "echo: hi"},
    ]
    needed = count_messages(prompt) + count_functions([f.to_body() for f in FUNCTIONS])
    largest = 4096 - needed
    beyond, too_many = world.platform.ephemerals_for("alice")
    assert beyond == (
        "max_tokens 100000 is more than llm-3.5-turbo's whole context of 4096 tokens, which the "
        f"prompt and the answer share. With this conversation the largest max_tokens that fits "
        f"is {largest}."
    )
    assert too_many.startswith("max_tokens 4000 does not fit: llm-3.5-turbo's context is 4096")
    assert too_many.endswith(f"the largest max_tokens that fits is {largest}.")
    assert world.chat_bodies() == []
    await alice.command("chat", prompt="echo: hi", max_tokens=largest)
    assert world.chat_bodies()[-1]["max_tokens"] == largest
    assert world.texts_in(DM) == ["hi"]
