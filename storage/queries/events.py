"""Inbound event deduplication: each platform event id is handled once within the retention."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from storage.queries.base import Clock
from storage.sql.session import Database

SQL_REMEMBER: Final = (
    "INSERT INTO processed_events (platform, event_id, seen_at) VALUES (?, ?, ?)"
    " ON CONFLICT (platform, event_id) DO UPDATE SET seen_at = excluded.seen_at"
    " WHERE processed_events.seen_at < ?"
)
SQL_PRUNE: Final = "DELETE FROM processed_events WHERE seen_at < ?"
PRUNE_EVERY = 1000
"""Expired entries are deleted once every this many remembered events (per process)."""


@dataclass
class EventDedupe:
    """Inbound platform events handled once, across restarts and processes."""

    db: Database
    clock: Clock
    retention: float
    """Seconds an event id is remembered."""

    _remembered_since_prune: int = 0

    async def remember_event(self, platform: str, event_id: str) -> bool:
        """True the first time an event id is seen (within the retention), False for a repeat:
        handle the event only on True."""
        self._remembered_since_prune += 1
        prune = self._remembered_since_prune >= PRUNE_EVERY
        if prune:
            self._remembered_since_prune = 0
        now = self.clock()
        cutoff = now - self.retention
        if prune:
            await self.db.execute(SQL_PRUNE, (cutoff,), repeatable=True)
        return await self.db.execute(SQL_REMEMBER, (platform, event_id, now, cutoff)) == 1
