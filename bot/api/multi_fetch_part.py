"""What one multi_fetch call answered, as :meth:`bot.api.tasks.TaskClient.multi_fetch_parts`
yields it (with the other answers that came meanwhile)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.api.errors import ApiError
from bot.api.models_task_records import TaskRecord


@dataclass(frozen=True)
class MultiFetchPart:
    """One multi_fetch call's answer: ``task_ids``, the ids it asked for (at most 50);
    ``records``, what it said of them as :meth:`~bot.api.tasks.TaskClient.multi_fetch` says it
    (``None`` for an id the provider answered ``null`` for, one it cannot resolve; an id the
    answer does not mention, and a task still in flight in the status the caller knows, left
    out); ``misnamed``, the ids whose record names another task (or none): left out of
    ``records`` and not answered by this call; ``error``, why the call failed (then ``records``
    is empty)."""

    task_ids: tuple[str, ...]
    records: Mapping[str, TaskRecord | None] = field(default_factory=dict)
    error: ApiError | None = None
    misnamed: frozenset[str] = frozenset()
