"""The audit log: admin actions, moderation refusals and bans, kept ``keep_days`` and purged by
one process at a time (the one whose conditional update moves the purge's due time)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from storage.queries.base import Clock
from storage.records.audit import AuditEntry
from storage.records.usage import DAY
from storage.sql.session import Database, Row, from_json, record, to_json

SQL_RECORD: Final = (
    "INSERT INTO audit_log (at, platform, workspace_id, channel_id, actor_id, kind, target,"
    " state_before, state_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
)
SQL_ENTRIES: Final = (
    "SELECT * FROM audit_log WHERE platform = ? AND workspace_id = ? AND at >= ?"
    " AND (? = '' OR actor_id = ? OR target = ?) AND (? = '' OR kind = ? OR kind LIKE ?)"
    " ORDER BY id DESC LIMIT ? OFFSET ?"
)
SQL_CLAIM_PURGE: Final = "UPDATE audit_purge SET due_at = ? WHERE due_at <= ?"
SQL_PURGE: Final = "DELETE FROM audit_log WHERE at < ?"
PURGE_EVERY: Final = 3600.0
"""Seconds between two purges over all processes."""


def _entry(row: Row) -> AuditEntry:
    states = from_json(row["state_before"], None), from_json(row["state_after"], None)
    return record(AuditEntry, row, before=states[0], after=states[1])


@dataclass
class AuditLog:
    """The audit log on one database (either backend)."""

    db: Database
    clock: Clock

    async def record(self, entry: AuditEntry) -> AuditEntry:
        """Keep ``entry`` (stamped now); the entry as kept, with its id and time."""
        now = self.clock()
        e = entry
        values = (now, e.platform, e.workspace_id, e.channel_id, e.actor_id, e.kind, e.target)
        states = tuple(None if s is None else to_json(s) for s in (e.before, e.after))
        row = await self.db.fetch_one(SQL_RECORD, (*values, *states), repeatable=False)
        assert row is not None
        return replace(entry, at=now, id=int(row["id"]))

    async def entries(
        self,
        platform: str,
        workspace_id: str,
        *,
        user: str = "",
        kind: str = "",
        days: float | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> list[AuditEntry]:
        """A workspace's entries, newest first: only those by or about ``user``, of ``kind``
        (a whole kind, or a family such as ``moderation``), of the last ``days`` when given."""
        since = self.clock() - days * DAY if days is not None else 0.0
        where = (platform, workspace_id, since, user, user, user, kind, kind, f"{kind}.%")
        rows = await self.db.fetch_all(SQL_ENTRIES, (*where, limit, offset))
        return [_entry(row) for row in rows]

    async def purge(self, keep_days: float) -> int | None:
        """Delete the entries older than ``keep_days`` when this process is the one to purge
        this hour (None when another one is, or did); how many were deleted."""
        now = self.clock()
        if await self.db.execute(SQL_CLAIM_PURGE, (now + PURGE_EVERY, now), repeatable=True) != 1:
            return None
        return await self.db.execute(SQL_PURGE, (now - keep_days * DAY,), repeatable=True)
