"""Records of a user's preferences: a saved option, and a batch of jobs awaiting its Run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

BatchOutcome = Literal["run", "cancelled"]


@dataclass(frozen=True)
class SavedOption:
    """``--name`` of a user: the ``text`` it stands for; ``channel_id`` ``""`` everywhere,
    else only in that channel."""

    name: str
    text: str
    channel_id: str = ""


@dataclass(frozen=True)
class Batch:
    """Jobs one command would start, shown in a preview until its Run or Cancel, then (run)
    started as the user's places allow: ``command`` is what to start (JSON, the feature's to
    read), ``total`` jobs of which the first ``started`` were started (or given up);
    ``outcome`` once settled."""

    id: str
    platform: str
    workspace_id: str
    channel_id: str
    requester_id: str
    command: dict[str, Any]
    created_at: float
    expires_at: float
    total: int
    started: int = 0
    outcome: BatchOutcome | None = None
