"""Who and what a log line is about: the platform, user and job ids of the work in progress.

The adapter runner binds the platform and user of each event it runs, and the job machinery
binds the job id it works on; the ids follow the work into every task it starts (they live in
:mod:`contextvars`). Formatters read them with :func:`current` (the JSON log format writes them
as fields).
"""

from __future__ import annotations

from contextvars import ContextVar

FIELDS = ("platform", "user_id", "job_id")
_values: dict[str, ContextVar[str | None]] = {
    name: ContextVar(f"genbot_log_{name}", default=None) for name in FIELDS
}


def bind(**fields: str | None) -> None:
    """Set some of :data:`FIELDS` for the rest of the current task (and the tasks it starts)."""
    for name, value in fields.items():
        _values[name].set(value)


def current() -> dict[str, str]:
    """The fields bound in the current context (unset ones left out)."""
    found = {name: var.get() for name, var in _values.items()}
    return {name: value for name, value in found.items() if value is not None}
