"""Database rows (as dicts, the same column names on every backend) into storage records."""

from __future__ import annotations

import json
from typing import Any

from storage.job_records import Job
from storage.records import ChatMessage, Conversation, ScopeSettings

Row = dict[str, Any]


def to_json(value: Any) -> str:
    """Compact JSON text for a JSON column."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def from_json(value: Any, default: Any) -> Any:
    """The value of a JSON column: ``default`` for NULL, text decoded, anything else (a driver
    that decodes JSON itself) as it is."""
    if value is None:
        return default
    if isinstance(value, str | bytes):
        return json.loads(value)
    return value


def job_from_row(row: Row) -> Job:
    return Job(
        id=row["id"],
        family=row["family"],
        type=row["type"],
        status=row["status"],
        provider_id=row["provider_id"],
        parent_job_id=row["parent_job_id"],
        action=row["action"],
        requester_id=row["requester_id"],
        platform=row["platform"],
        workspace_id=row["workspace_id"],
        channel_id=row["channel_id"],
        thread_id=row["thread_id"],
        progress_message_id=row["progress_message_id"],
        result_message_id=row["result_message_id"],
        prompt=row["prompt"],
        parameters=from_json(row["parameters"], {}),
        result_urls=from_json(row["result_urls"], []),
        actions=from_json(row["actions"], []),
        result=from_json(row["result"], {}),
        error=row["error"],
        webhook_secret=row["webhook_secret"],
        credits=row["credits"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        finished_at=row["finished_at"],
        last_polled_at=row["last_polled_at"],
        last_webhook_at=row["last_webhook_at"],
        next_poll_at=row["next_poll_at"],
        delivery_attempts=row["delivery_attempts"],
        post_claims=row["post_claims"],
        owner=row["owner"],
        is_dm=bool(row["is_dm"]),
        lease_until=row["lease_until"],
        lease_generation=row["lease_generation"],
        command_key=row["command_key"],
    )


def conversation_from_row(row: Row) -> Conversation:
    return Conversation(
        id=row["id"],
        platform=row["platform"],
        workspace_id=row["workspace_id"],
        channel_id=row["channel_id"],
        thread_key=row["thread_key"],
        kind=row["kind"],
        created_by=row["created_by"],
        model=row["model"],
        system_prompt=row["system_prompt"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def message_from_row(row: Row, platform_ids: tuple[str, ...]) -> ChatMessage:
    return ChatMessage(
        id=row["id"],
        conversation_id=row["conversation_id"],
        role=row["role"],
        content=row["content"],
        parts=from_json(row["parts"], None),
        function_call=from_json(row["function_call"], None),
        name=row["name"],
        token_count=row["token_count"],
        platform_message_ids=platform_ids,
        created_at=row["created_at"],
    )


def _flag(value: Any) -> bool | None:
    return None if value is None else bool(value)


def scope_from_row(row: Row) -> ScopeSettings:
    return ScopeSettings(
        kind=row["kind"],
        platform=row["platform"],
        scope_id=row["scope_id"],
        model=row["model"],
        system_prompt=row["system_prompt"],
        process_mode=row["process_mode"],
        aspect_ratio=row["aspect_ratio"],
        temperature=row["temperature"],
        stream=_flag(row["stream"]),
        remix=_flag(row["remix"]),
        top_p=row["top_p"],
        presence_penalty=row["presence_penalty"],
        frequency_penalty=row["frequency_penalty"],
        stop=row["stop"],
        n=row["n"],
        updated_at=row["updated_at"],
    )


def messages_with_links(
    rows: list[Row], links: list[Row], *, turn_column: str = "chat_message_id"
) -> list[ChatMessage]:
    """Turns in row order, each with the platform message ids linked to it (link order)."""
    platform_ids: dict[int, list[str]] = {}
    for link in links:
        platform_ids.setdefault(link[turn_column], []).append(link["message_id"])
    return [message_from_row(row, tuple(platform_ids.get(row["id"], ()))) for row in rows]
