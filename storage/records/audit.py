"""The audit log's record: one admin action, moderation refusal or ban."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AuditEntry:
    """Who (``actor_id``; ``genbot`` for what genbot did by itself, such as a ban) did what
    (``kind``, e.g. ``moderation.rule_added``) to what (``target``: a user, a rule, a job, a
    scope), where (``platform``, ``workspace_id``, ``channel_id``), when (``at``, Unix
    seconds) and the state before and after (JSON values, None where there was none).
    ``id`` is the store's number for it (0 before it is recorded)."""

    kind: str
    platform: str
    workspace_id: str
    channel_id: str
    actor_id: str
    target: str
    before: Any = None
    after: Any = None
    at: float = 0.0
    id: int = 0
