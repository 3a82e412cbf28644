"""What a webhook notification means (the receiver authenticated it already).

The API documentation does not show the notification's body (docs/provider.md#webhook-body), so a
notification is a *signal*: any JSON body, or an empty one, that arrived with the job's secret
says "this task changed". When the body is (or wraps, as ``{"data": …}`` or ``{"task": …}``, or
keys by task id) a task record for this same task — with a status and a ``task_result`` — genbot
uses it as a fetch answer; anything else (``{"task_id", "status"}`` only, another task's id, an
unreadable record) means "read the record with multi_fetch now". Only a body that is not JSON at
all is refused. A notification that reached genbot's bare address (no job in its path, see
:mod:`bot.features.jobs.webhook_addresses`) names its task in the body: :func:`task_id_of`. Pure: no
I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.api import ApiError, TaskRecord, read_model

WRAPPERS = ("data", "task", "record", "result", "payload")
MAX_DEPTH = 3


@dataclass(frozen=True)
class UseRecord:
    """The body carries this task's record: apply it like a fetch answer."""

    record: TaskRecord


@dataclass(frozen=True)
class FetchNow:
    """The body is only a signal: read the task's record with multi_fetch at once."""


class NotJson(ValueError):
    """The body is neither empty nor JSON: not a notification."""


Notification = UseRecord | FetchNow


def _candidates(value: Any, task_id: str | None, depth: int = 0) -> list[Mapping[str, Any]]:
    """The body itself and what it wraps, outermost first."""
    if not isinstance(value, Mapping) or depth > MAX_DEPTH:
        return []
    found: list[Mapping[str, Any]] = [value]
    inner_keys = [*WRAPPERS, *([task_id] if task_id else [])]
    for key in inner_keys:
        found += _candidates(value.get(key), task_id, depth + 1)
    return found


def _is_record_for(candidate: Mapping[str, Any], task_id: str | None) -> bool:
    given = candidate.get("task_id")
    if not isinstance(given, str) or not given:
        return False
    if task_id is not None and given != task_id:
        return False
    return isinstance(candidate.get("status"), str) and isinstance(
        candidate.get("task_result"), Mapping
    )


def read_notification(body: bytes, task_id: str | None) -> Notification:
    """What a notification for the task ``task_id`` (``None``: the job has no provider id
    yet, so a record for any task id is taken) asks genbot to do. Raises :class:`NotJson`."""
    if not body.strip():
        return FetchNow()
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise NotJson("the webhook body is not JSON") from None
    for candidate in _candidates(parsed, task_id):
        if not _is_record_for(candidate, task_id):
            continue
        try:
            return UseRecord(read_model(TaskRecord, dict(candidate), "webhook"))
        except ApiError:
            return FetchNow()
    return FetchNow()


def task_id_of(body: bytes) -> str | None:
    """The task a notification that came without a job in its address is about: the first
    ``task_id`` in the body or what it wraps (``data``, ``task``, …); None when there is none
    or the body is not JSON."""
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    for candidate in _candidates(parsed, None):
        given = candidate.get("task_id")
        if isinstance(given, str) and given:
            return given
    return None
