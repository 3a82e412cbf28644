"""Settings per user, channel and workspace, and their precedence."""

from __future__ import annotations

from typing import Any

import pytest

from storage import ConversationKey, SettingValues, StorageError, Store

DEFAULTS = SettingValues(
    model="llm-3.5-turbo",
    system_prompt="You are genbot.",
    process_mode="relax",
    aspect_ratio="1:1",
    temperature=1.0,
)


async def effective(store: Store, **overrides: object) -> dict[str, object]:
    arguments: dict[str, object] = {
        "user_id": "u1",
        "channel_id": "c1",
        "workspace_id": "g1",
        "defaults": DEFAULTS,
    }
    arguments.update(overrides)
    settings = await store.settings.effective_settings("discord", **arguments)  # type: ignore[arg-type]
    return {
        "model": settings.model,
        "system_prompt": settings.system_prompt,
        "process_mode": settings.process_mode,
        "aspect_ratio": settings.aspect_ratio,
        "temperature": settings.temperature,
        "sources": dict(settings.sources),
    }


async def test_partial_updates_and_clearing_a_value(store: Store) -> None:
    assert await store.settings.get_scope_settings("channel", "discord", "c1") is None
    await store.settings.set_scope_settings(
        "channel", "discord", "c1", model="llm-4", temperature=0.2
    )
    stored = await store.settings.set_scope_settings(
        "channel", "discord", "c1", aspect_ratio="16:9"
    )
    assert (stored.model, stored.temperature, stored.aspect_ratio) == ("llm-4", 0.2, "16:9")
    cleared = await store.settings.set_scope_settings("channel", "discord", "c1", model=None)
    assert (cleared.model, cleared.temperature) == (None, 0.2)
    assert await store.settings.get_scope_settings("channel", "discord", "c1") == cleared
    assert await store.settings.get_scope_settings("channel", "slack", "c1") is None


async def test_only_defaults_when_nothing_is_set(store: Store) -> None:
    merged = await effective(store)
    assert merged["model"] == "llm-3.5-turbo"
    assert set(merged["sources"].values()) == {"default"}  # type: ignore[attr-defined]


async def test_user_beats_channel_beats_workspace(store: Store) -> None:
    await store.settings.set_scope_settings(
        "workspace", "discord", "g1", model="llm-4", process_mode="fast", aspect_ratio="3:2"
    )
    await store.settings.set_scope_settings(
        "channel", "discord", "c1", model="llm-4-0613", temperature=0.5
    )
    await store.settings.set_scope_settings("user", "discord", "u1", model="llm-3.5-turbo-16k")
    merged = await effective(store)
    assert merged == {
        "model": "llm-3.5-turbo-16k",
        "system_prompt": "You are genbot.",
        "process_mode": "fast",
        "aspect_ratio": "3:2",
        "temperature": 0.5,
        "sources": {
            "model": "user",
            "system_prompt": "default",
            "process_mode": "workspace",
            "aspect_ratio": "workspace",
            "temperature": "channel",
        },
    }
    other_user = await effective(store, user_id="u2")
    assert (other_user["model"], other_user["sources"]["model"]) == (  # type: ignore[index]
        "llm-4-0613",
        "channel",
    )
    elsewhere = await effective(store, user_id=None, channel_id="c2", workspace_id=None)
    assert elsewhere["model"] == "llm-3.5-turbo"


async def test_the_system_prompt_is_per_channel(store: Store) -> None:
    await store.settings.set_scope_settings(
        "workspace", "discord", "g1", system_prompt="workspace voice"
    )
    assert (await effective(store))["system_prompt"] == "workspace voice"
    await store.settings.set_scope_settings(
        "channel", "discord", "c1", system_prompt="channel voice"
    )
    assert (await effective(store))["system_prompt"] == "channel voice"
    assert (await effective(store, channel_id="c2"))["system_prompt"] == "workspace voice"
    with pytest.raises(StorageError, match="per channel"):
        await store.settings.set_scope_settings("user", "discord", "u1", system_prompt="mine")
    with pytest.raises(StorageError, match="scope"):
        await store.settings.set_scope_settings("team", "discord", "x", model="m")  # type: ignore[arg-type]
    for name in ("colour", "model = 'x', kind"):
        with pytest.raises(StorageError, match="unknown settings"):
            await store.settings.set_scope_settings("channel", "discord", "c1", **{name: "x"})
    channel = await store.settings.get_scope_settings("channel", "discord", "c1")
    assert channel is not None and channel.model is None


async def test_a_conversation_overrides_model_and_prompt(store: Store) -> None:
    await store.settings.set_scope_settings("user", "discord", "u1", model="llm-4")
    conversation, _ = await store.conversations.get_or_create_conversation(
        ConversationKey("discord", "g1", "c1", "t"), kind="thread"
    )
    await store.conversations.update_conversation(conversation.id, model="llm-4-vision-preview")
    conversation = await store.conversations.get_conversation(conversation.id)  # type: ignore[assignment]
    merged = await effective(store, conversation=conversation)
    assert (merged["model"], merged["sources"]["model"]) == (  # type: ignore[index]
        "llm-4-vision-preview",
        "conversation",
    )
    assert merged["system_prompt"] == "You are genbot."


async def test_chat_request_settings_round_trip_per_channel(store: Store) -> None:
    stored = await store.settings.set_scope_settings(
        "channel", "discord", "c1",
        stream=False, top_p=0.5, presence_penalty=-1.5, frequency_penalty=2.0,
        stop='["###", "END"]', n=3,
    )  # fmt: skip
    assert (stored.stream, stored.top_p, stored.n) == (False, 0.5, 3)
    assert (stored.presence_penalty, stored.frequency_penalty) == (-1.5, 2.0)
    assert stored.stop == '["###", "END"]'
    assert await store.settings.get_scope_settings("channel", "discord", "c1") == stored
    await store.settings.set_scope_settings(
        "workspace", "discord", "g1", stream=True, n=2, top_p=0.9
    )
    merged = await store.settings.effective_settings(
        "discord", user_id="u1", channel_id="c1", workspace_id="g1"
    )
    assert (merged.stream, merged.n, merged.top_p) == (False, 3, 0.5)
    assert merged.sources["stream"] == "channel"
    refused: list[dict[str, Any]] = [{"stream": False}, {"n": 2}, {"top_p": 0.1}, {"stop": "[]"}]
    for setting in refused:
        with pytest.raises(StorageError, match="per channel or workspace"):
            await store.settings.set_scope_settings("user", "discord", "u1", **setting)


async def test_remix_is_a_users_own_toggle(store: Store) -> None:
    await store.settings.set_scope_settings("channel", "discord", "c1", remix=False)
    await store.settings.set_scope_settings("user", "discord", "u1", remix=True)
    mine = await store.settings.effective_settings(
        "discord", user_id="u1", channel_id="c1", workspace_id=None
    )
    theirs = await store.settings.effective_settings(
        "discord", user_id="u2", channel_id="c1", workspace_id=None
    )
    assert (mine.remix, mine.sources["remix"]) == (True, "user")
    assert (theirs.remix, theirs.sources["remix"]) == (False, "channel")
