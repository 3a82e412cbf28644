"""Inbound event deduplication: each platform event id is handled once within the retention."""

from __future__ import annotations

from typing import Final

from sqlite_utils import Database

from storage.sqlite.base import StoreBase
from storage.sqlite.sql import write_transaction

SQL_REMEMBER: Final = (
    "INSERT INTO processed_events (platform, event_id, seen_at) VALUES (?, ?, ?)"
    " ON CONFLICT (platform, event_id) DO UPDATE SET seen_at = excluded.seen_at"
    " WHERE processed_events.seen_at < ?"
)
SQL_PRUNE: Final = "DELETE FROM processed_events WHERE seen_at < ?"
PRUNE_EVERY: Final = 1000
"""Expired entries are deleted once every this many remembered events."""


class SqliteEventDedupe(StoreBase):
    """Event dedupe methods of :class:`storage.sqlite.SqliteStore`."""

    event_retention: float = 24 * 3600.0
    """Seconds an inbound event id is remembered (platform retries come within minutes)."""

    _remembered_since_prune = 0

    async def remember_event(self, platform: str, event_id: str) -> bool:
        """True the first time an event id is seen within ``event_retention``, False for a
        repeat (a platform retry, or the same event given to another process)."""
        self._remembered_since_prune += 1
        prune = self._remembered_since_prune >= PRUNE_EVERY
        if prune:
            self._remembered_since_prune = 0

        def work(db: Database) -> bool:
            now = self._now()
            cutoff = now - self.event_retention
            with write_transaction(db):
                if prune:
                    db.conn.execute(SQL_PRUNE, (cutoff,))
                cursor = db.conn.execute(SQL_REMEMBER, (platform, event_id, now, cutoff))
            return cursor.rowcount == 1

        return await self._call(work)
