"""What a webhook notification means (the receiver authenticated it already).

The API documentation does not show the notification's body (docs/provider.md#webhook-body), so a
notification is a *signal*: any JSON body, or an empty one, that arrived with the job's secret
says "this task changed". When the body is (or wraps, as ``{"data": …}`` or ``{"task": …}``, or
keys by task id) a task record for this same task — with a status and a ``task_result`` — still
in flight, genbot uses it as a fetch answer (progress only). A record saying the task ended
(``finished`` / ``failed``) is never taken on its word: its result is what genbot would post, and
anyone holding the secret could make one up, so genbot reads the task with multi_fetch and posts
what the provider answers. For a job without a task id yet, no record is taken either: the task
it names is read, and adopted only if the provider answers for it. Anything
else (``{"task_id", "status"}`` only, another task's id, an unreadable record) also means "read
the record with multi_fetch now". Only a body that is not JSON at all is refused. A notification
that reached genbot's bare address (no job in its path, see
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
ENDED = frozenset(("finished", "failed"))
"""The statuses a notification's record is not taken for: genbot confirms them with the provider."""


@dataclass(frozen=True)
class UseRecord:
    """The body carries this task's record, still in flight: apply it like a fetch answer."""

    record: TaskRecord


@dataclass(frozen=True)
class FetchNow:
    """Read the task's record with multi_fetch at once: the body is only a signal, or claims
    the task ended. ``task_id``: the task a record for a job without a task id yet names (to
    be read, and adopted if the provider knows it); None otherwise."""

    task_id: str | None = None


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
    yet, so the task a record names is to be read) asks genbot to do. Raises :class:`NotJson`."""
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
            record = read_model(TaskRecord, dict(candidate), "webhook")
        except ApiError:
            return FetchNow()
        if task_id is None:
            return FetchNow(record.task_id)
        if record.status in ENDED:
            return FetchNow()
        return UseRecord(record)
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
