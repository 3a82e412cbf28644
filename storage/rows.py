"""Database rows (as dicts, the same column names on every backend) into storage records."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any, Final

from storage.job_records import Job
from storage.records import ChatMessage, Conversation, ScopeSettings

Row = dict[str, Any]
_JOB_COLUMNS: Final = tuple(field.name for field in fields(Job))
_JOB_JSON: Final[dict[str, Any]] = {
    "parameters": {},
    "result_urls": [],
    "actions": [],
    "result": {},
}
_CONVERSATION_COLUMNS: Final = tuple(field.name for field in fields(Conversation))
_SCOPE_COLUMNS: Final = tuple(field.name for field in fields(ScopeSettings))


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
    values = {name: row[name] for name in _JOB_COLUMNS}
    for name, default in _JOB_JSON.items():
        values[name] = from_json(values[name], default)
    values["is_dm"] = bool(values["is_dm"])
    return Job(**values)


def conversation_from_row(row: Row) -> Conversation:
    return Conversation(**{name: row[name] for name in _CONVERSATION_COLUMNS})


def scope_from_row(row: Row) -> ScopeSettings:
    values = {name: row[name] for name in _SCOPE_COLUMNS}
    for flag in ("stream", "remix"):
        values[flag] = None if values[flag] is None else bool(values[flag])
    return ScopeSettings(**values)


def messages_with_links(rows: list[Row], links: list[Row]) -> list[ChatMessage]:
    """Turns in row order, each with the platform message ids linked to it (link order)."""
    platform_ids: dict[int, list[str]] = {}
    for link in links:
        platform_ids.setdefault(link["chat_message_id"], []).append(link["message_id"])
    return [_turn(row, tuple(platform_ids.get(row["id"], ()))) for row in rows]


def _turn(row: Row, platform_ids: tuple[str, ...]) -> ChatMessage:
    parts, call = from_json(row.pop("parts"), None), from_json(row.pop("function_call"), None)
    return ChatMessage(**row, parts=parts, function_call=call, platform_message_ids=platform_ids)
