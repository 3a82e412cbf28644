"""The fake Slack's agent messaging experience, driven by the real slack-sdk: it holds the app
to its manifest (agent_view, the assistant:write scope, the events and the shortcut it
declares) and to the suggested prompts' rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack import FakeSlack
from tests.fakes.slack_agent import load_manifest

PROMPT = {"title": "Draw", "message": "Draw a fox"}


def without(path: list[str], item: str | None = None) -> dict[str, Any]:
    """genbot's manifest with the key at ``path`` removed (or ``item`` from the list there)."""
    manifest = copy.deepcopy(load_manifest())
    parent = manifest
    for key in path[:-1]:
        parent = parent[key]
    if item is None:
        del parent[path[-1]]
    else:
        parent[path[-1]].remove(item)
    return manifest


async def test_suggested_prompts_follow_slacks_rules(fake: FakeSlack) -> None:
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    await client.assistant_threads_setSuggestedPrompts(channel_id="D1", prompts=[PROMPT])
    assert fake.suggested_prompts[(fake.team_id, "D1")]["prompts"] == [PROMPT]

    await client.assistant_threads_setSuggestedPrompts(
        channel_id="D1", thread_ts="1.000001", prompts=[PROMPT, PROMPT]
    )
    assert len(fake.ignored_prompts) == 1, "an agent app naming a thread is silently ignored"
    assert fake.suggested_prompts[(fake.team_id, "D1")]["prompts"] == [PROMPT]
    with pytest.raises(SlackApiError, match="invalid_arguments"):
        await client.assistant_threads_setSuggestedPrompts(channel_id="D1", prompts=[PROMPT] * 5)
    with pytest.raises(SlackApiError, match="channel_not_found"):
        await client.assistant_threads_setSuggestedPrompts(channel_id="C1", prompts=[PROMPT])


async def test_the_manifest_decides_what_the_app_may_do() -> None:
    message_shortcut = "genbot_ask"
    async with FakeSlack(
        manifest=without(["oauth_config", "scopes", "bot"], "assistant:write")
    ) as fake:
        client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
        with pytest.raises(SlackApiError, match="missing_scope"):
            await client.assistant_threads_setSuggestedPrompts(channel_id="D1", prompts=[PROMPT])
    async with FakeSlack(manifest=without(["features", "agent_view"])) as fake:
        with pytest.raises(AssertionError, match="only to apps with agent_view"):
            fake.app_context_changed_event("U1", "C1")
        assert "context" not in fake.messages_tab_opened_event("U1")
    events = ["settings", "event_subscriptions", "bot_events"]
    async with FakeSlack(manifest=without(events, "app_context_changed")) as fake:
        with pytest.raises(AssertionError, match="does not subscribe to app_context_changed"):
            fake.app_context_changed_event("U1", "C1")
    async with FakeSlack(manifest=without(["features", "shortcuts"])) as fake:
        with pytest.raises(AssertionError, match="no message shortcut"):
            fake.message_shortcut(fake.user_says("hi"), message_shortcut)


async def test_the_agent_experience_events_name_the_channel_in_view(fake: FakeSlack) -> None:
    opened = fake.messages_tab_opened_event("U1", viewing="C1")
    assert (opened["tab"], opened["channel"]) == ("messages", "D1")
    assert opened["context"]["entities"][0] == {
        "type": "slack#/types/channel_id",
        "value": "C1",
        "team_id": fake.team_id,
    }
    assert fake.app_context_changed_event("U1", None)["context"] == {}
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    assert (await client.conversations_open(users="U2"))["channel"]["id"] == "D2"


async def test_agent_sessions_follow_slacks_rules(fake: FakeSlack) -> None:
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    question = fake.user_says("hello", channel="D1")
    await client.agents_sessions_setStatus(
        channel_id="D1", thread_ts=question.ts, status="processing"
    )
    assert fake.sessions[("D1", question.ts)] == "processing"
    assert fake.stop_showing("D1", question.ts)
    with pytest.raises(SlackApiError, match="invalid_arguments"):
        await client.agents_sessions_setStatus(
            channel_id="D1", thread_ts=question.ts, status="thinking"
        )
    with pytest.raises(SlackApiError, match="invalid_thread_ts"):
        await client.agents_sessions_setStatus(channel_id="D1", status="active")
    with pytest.raises(SlackApiError, match="invalid_thread_ts"):
        await client.agents_sessions_setStatus(
            channel_id="D1", thread_ts="9.000009", status="active"
        )
    assert fake.sessions[("D1", question.ts)] == "processing", "a refused call changes nothing"

    stream = await client.chat_startStream(channel="D1", thread_ts=question.ts)
    await client.chat_stopStream(channel="D1", ts=stream["ts"])
    assert fake.sessions[("D1", question.ts)] == "active", "chat.stopStream ends processing"
    assert not fake.stop_showing("D1", question.ts)


async def test_only_an_agent_app_has_sessions_and_its_stop_needs_the_event() -> None:
    async with FakeSlack(manifest=without(["features", "agent_view"])) as fake:
        client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
        question = fake.user_says("hello", channel="D1")
        with pytest.raises(SlackApiError, match="not_allowed"):
            await client.agents_sessions_setStatus(
                channel_id="D1", thread_ts=question.ts, status="processing"
            )
    unsubscribed = without(
        ["settings", "event_subscriptions", "bot_events"], "agent_session_stopped"
    )
    async with FakeSlack(manifest=unsubscribed) as fake:
        client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
        question = fake.user_says("hello", channel="D1")
        answer = await client.agents_sessions_setStatus(
            channel_id="D1", thread_ts=question.ts, status="processing"
        )
        assert answer.get("warning") == "missing_agent_session_stopped_event_subscription"
        assert not fake.stop_showing("D1", question.ts)
