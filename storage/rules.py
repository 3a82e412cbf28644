"""What every backend checks the same way: job vocabulary and moves, field names, settings merge.

Backends differ in SQL only; arguments are validated here, before any statement runs, so a bad
argument raises the same :class:`StorageError` on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any, Final, get_args

from storage.errors import StorageError
from storage.records.chat import ChatRole, Conversation
from storage.records.jobs import (
    ALL_STATUSES,
    JOB_ID_MAX,
    JOB_TRANSITIONS,
    Job,
    JobFamily,
    JobStatus,
    NewJob,
)
from storage.records.platforms import PlaygroundMessage
from storage.records.settings import (
    SETTING_NAMES,
    EffectiveSettings,
    ScopeKind,
    SettingSource,
    SettingValues,
    _Unset,
)

JSON_FIELDS: Final[frozenset[str]] = frozenset(("parameters", "result_urls", "actions", "result"))
UPDATABLE_FIELDS: Final[frozenset[str]] = JSON_FIELDS | {
    "type", "provider_id", "thread_id", "progress_message_id", "result_message_id", "prompt",
    "error", "webhook_secret", "credits", "finished_at", "last_polled_at", "last_webhook_at",
    "next_poll_at", "delivery_attempts", "post_claims",
}  # fmt: skip
"""Fields ``update_job`` and ``transition`` accept as keywords."""
DONE_AT_PROVIDER: Final[frozenset[str]] = frozenset(("finished", "failed", "create_failed"))
"""Entering one of these stamps ``finished_at`` (unless given or already set)."""
_JOB_ID_PATTERN: Final = re.compile(rf"[A-Za-z0-9_-]{{1,{JOB_ID_MAX}}}")

PRECEDENCE: Final[dict[str, tuple[SettingSource, ...]]] = {
    "model": ("conversation", "user", "channel", "workspace", "default"),
    "system_prompt": ("conversation", "channel", "workspace", "default"),
    "process_mode": ("user", "channel", "workspace", "default"),
    "aspect_ratio": ("user", "channel", "workspace", "default"),
    "temperature": ("user", "channel", "workspace", "default"),
    "stream": ("channel", "workspace", "default"),
    "remix": ("user", "channel", "workspace", "default"),
    "top_p": ("channel", "workspace", "default"),
    "presence_penalty": ("channel", "workspace", "default"),
    "frequency_penalty": ("channel", "workspace", "default"),
    "stop": ("channel", "workspace", "default"),
    "n": ("channel", "workspace", "default"),
}
"""Where each setting is looked for, first match wins. The system prompt and the chat request
parameters (stream, top_p, penalties, stop, n) are per channel (user-level ones are refused);
the conversation's own overrides exist for model and prompt."""
CHANNEL_ONLY: Final[frozenset[str]] = frozenset(
    name for name, sources in PRECEDENCE.items() if "user" not in sources
)
"""Settings with no user level."""


def utc_day(timestamp: float) -> str:
    """The UTC day (``YYYY-MM-DD``) of a Unix timestamp."""
    return datetime.fromtimestamp(timestamp, UTC).date().isoformat()


def day_text(day: str | date) -> str:
    """A day given as ``date`` or ``YYYY-MM-DD`` text, validated, as text."""
    if isinstance(day, date):
        return day.isoformat()
    try:
        return date.fromisoformat(day).isoformat()
    except ValueError:
        raise StorageError(f"not a day (YYYY-MM-DD): {day!r}") from None


def check_word(value: str, vocabulary: Any, what: str) -> None:
    """Refuse ``value`` unless it is a word of the ``Literal`` type ``vocabulary``."""
    words = get_args(vocabulary)
    if value not in words:
        raise StorageError(f"unknown {what} {value!r} (one of: {', '.join(words)})")


def check_new_job(new: NewJob) -> None:
    """Refuse an unknown family or status, or a malformed caller-chosen id."""
    check_word(new.family, JobFamily, "job family")
    check_word(new.status, JobStatus, "job status")
    if new.id is not None and not _JOB_ID_PATTERN.fullmatch(new.id):
        raise StorageError(f"a job id is 1–{JOB_ID_MAX} characters of A-Z a-z 0-9 - _")


def status_tuple(statuses: JobStatus | Iterable[JobStatus]) -> tuple[JobStatus, ...]:
    """One status or several, validated, sorted and without repeats."""
    chosen: tuple[JobStatus, ...] = (
        (statuses,) if isinstance(statuses, str) else tuple(sorted(set(statuses)))
    )
    if not chosen:
        raise StorageError("at least one status is needed")
    unknown = [status for status in chosen if status not in ALL_STATUSES]
    if unknown:
        raise StorageError(f"unknown job status {unknown[0]!r}")
    return chosen


def check_transition(
    from_statuses: JobStatus | Iterable[JobStatus], to_status: JobStatus
) -> tuple[JobStatus, ...]:
    """The validated source statuses of a move ``JOB_TRANSITIONS`` allows; else raises."""
    sources = status_tuple(from_statuses)
    if to_status not in ALL_STATUSES:
        raise StorageError(f"unknown job status {to_status!r}")
    illegal = [s for s in sources if s != to_status and to_status not in JOB_TRANSITIONS[s]]
    if illegal:
        raise StorageError(f"job status cannot go from {illegal[0]!r} to {to_status!r}")
    return sources


def check_job_fields(fields: Mapping[str, Any]) -> None:
    """Refuse field names ``update_job`` / ``transition`` do not accept."""
    unknown = set(fields) - UPDATABLE_FIELDS
    if unknown:
        raise StorageError(f"not updatable job fields: {', '.join(sorted(unknown))}")


def check_turn(role: str, name: str | None) -> None:
    """A chat turn's role is known, and a function turn names its function."""
    check_word(role, ChatRole, "chat role")
    if role == "function" and not name:
        raise StorageError("a function message needs the function's name")


def given_settings(kind: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a partial update that were given (``UNSET`` left out), checked."""
    check_word(kind, ScopeKind, "settings scope")
    given = {name: value for name, value in values.items() if not isinstance(value, _Unset)}
    unknown = set(given) - set(SETTING_NAMES)
    if unknown:
        raise StorageError(f"unknown settings: {', '.join(sorted(unknown))}")
    per_user = [name for name in CHANNEL_ONLY if given.get(name) is not None]
    if kind == "user" and per_user:
        raise StorageError(f"{per_user[0]} is set per channel or workspace, not per user")
    return given


def merge_settings(
    scopes: Mapping[SettingSource, SettingValues],
    *,
    defaults: SettingValues | None,
    conversation: Conversation | None,
) -> EffectiveSettings:
    """Merge the stored scopes, the conversation's overrides and the defaults by
    ``PRECEDENCE``; ``sources`` says where each value came from."""
    layers: dict[SettingSource, SettingValues] = dict(scopes)
    if conversation is not None:
        layers["conversation"] = SettingValues(
            model=conversation.model, system_prompt=conversation.system_prompt
        )
    if defaults is not None:
        layers["default"] = defaults
    values: dict[str, Any] = {}
    sources: dict[str, SettingSource] = {}
    for name in SETTING_NAMES:
        for source in PRECEDENCE[name]:
            layer = layers.get(source)
            value = None if layer is None else getattr(layer, name)
            if value is not None:
                values[name] = value
                sources[name] = source
                break
    return EffectiveSettings(**values, sources=sources)


def newest_images(
    messages: Sequence[PlaygroundMessage], sizes: Mapping[str, int], max_bytes: int | None
) -> list[str]:
    """The keys of the images ``messages`` (oldest first) show, those of the newest messages
    first, as many as fit in ``max_bytes`` (None: all), returned oldest first; ``sizes``: the
    stored images' sizes."""
    chosen: dict[str, None] = {}
    total = 0
    for message in reversed(messages):
        for key in message.image_keys:
            size = sizes.get(key)
            if size is None or key in chosen:
                continue
            if max_bytes is not None and total + size > max_bytes:
                return list(chosen)[::-1]
            chosen[key] = None
            total += size
    return list(chosen)[::-1]


def share_of(load: Iterable[tuple[int, int]]) -> int:
    """A process's fair share of unfinished jobs from ``(jobs, live processes serving the
    platform)`` per platform it serves: each platform's jobs divided among its processes,
    rounded up (a platform nobody else serves is all this process's)."""
    return sum(-(-jobs // max(serving, 1)) for jobs, serving in load)


def taken(job: Job, owner: str, lease_until: float) -> Job:
    """``job`` as a claim just took it: ``owner``'s, a new lease until ``lease_until``."""
    return replace(
        job, owner=owner, lease_until=lease_until, lease_generation=job.lease_generation + 1
    )
