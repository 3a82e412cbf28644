"""A user's saved options (``/prefer``) and the batches of jobs previews show before they run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from storage.queries.base import Clock
from storage.records.preferences import Batch, BatchOutcome, SavedOption
from storage.sql.session import Database, Row, from_json, record, to_json

BATCHES_KEPT_SECONDS: Final = 24 * 3600.0
"""How long a settled or expired batch is kept (then a later save purges it)."""

SQL_SET_OPTION: Final = (
    "INSERT INTO saved_options (platform, user_id, channel_id, name, text, updated_at)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (platform, user_id, name, channel_id)"
    " DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at"
)
SQL_DELETE_OPTION: Final = (
    "DELETE FROM saved_options WHERE platform = ? AND user_id = ? AND name = ? AND channel_id = ?"
)
SQL_OPTIONS: Final = (
    "SELECT name, text, channel_id FROM saved_options WHERE platform = ? AND user_id = ?"
    " AND channel_id IN ('', ?) ORDER BY name, channel_id"
)
SQL_SAVE_BATCH: Final = (
    "INSERT INTO batches (id, platform, workspace_id, channel_id, requester_id, command, total,"
    " started, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)"
)
SQL_PURGE_BATCHES: Final = (
    "DELETE FROM batches WHERE expires_at < ? AND (outcome IS NULL OR outcome <> 'run'"
    " OR started >= total)"
)
SQL_BATCH: Final = "SELECT * FROM batches WHERE id = ?"
SQL_RUNNING_BATCHES: Final = (
    "SELECT * FROM batches WHERE outcome = 'run' AND started < total ORDER BY created_at"
)
SQL_MARK_STARTED: Final = "UPDATE batches SET started = ? WHERE id = ? AND started < ?"
SQL_SETTLE_BATCH: Final = (
    "UPDATE batches SET outcome = ?, settled_at = ? WHERE id = ? AND outcome IS NULL"
    " AND expires_at > ?"
)


@dataclass
class Preferences:
    """Saved options per user (everywhere, or in one channel) and batches awaiting a Run, on
    one database (either backend)."""

    db: Database
    clock: Clock

    async def set_option(self, platform: str, user_id: str, option: SavedOption) -> None:
        """Save ``option`` (replacing the one of that name and channel)."""
        values = (platform, user_id, option.channel_id, option.name, option.text, self.clock())
        await self.db.execute(SQL_SET_OPTION, values)

    async def delete_option(
        self, platform: str, user_id: str, name: str, channel_id: str = ""
    ) -> bool:
        """Delete ``--name`` (of ``channel_id``, ``""``: the one for everywhere); False when
        there was none."""
        return await self.db.execute(SQL_DELETE_OPTION, (platform, user_id, name, channel_id)) > 0

    async def options(self, platform: str, user_id: str, channel_id: str) -> list[SavedOption]:
        """The user's options that apply in ``channel_id``: those for everywhere and that
        channel's, by name (everywhere's first)."""
        rows = await self.db.fetch_all(SQL_OPTIONS, (platform, user_id, channel_id))
        return [SavedOption(r["name"], r["text"], r["channel_id"]) for r in rows]

    async def save_batch(self, batch: Batch) -> None:
        """Store ``batch`` (and purge those expired over a day ago, unless still starting)."""
        await self.db.execute(SQL_PURGE_BATCHES, (self.clock() - BATCHES_KEPT_SECONDS,))
        await self.db.execute(
            SQL_SAVE_BATCH,
            (
                batch.id, batch.platform, batch.workspace_id, batch.channel_id,
                batch.requester_id, to_json(batch.command), batch.total, batch.created_at,
                batch.expires_at,
            ),
        )  # fmt: skip

    async def batch(self, batch_id: str) -> Batch | None:
        """The batch ``batch_id``, if stored."""
        row = await self.db.fetch_one(SQL_BATCH, (batch_id,))
        return _batch(row) if row is not None else None

    async def running_batches(self) -> list[Batch]:
        """Batches that were run and still have jobs to start, oldest first."""
        return [_batch(row) for row in await self.db.fetch_all(SQL_RUNNING_BATCHES, ())]

    async def mark_started(self, batch_id: str, started: int) -> None:
        """Jobs 1 to ``started`` of the batch were started (or given up); never goes back."""
        await self.db.execute(SQL_MARK_STARTED, (started, batch_id, started))

    async def settle_batch(self, batch_id: str, outcome: BatchOutcome) -> bool:
        """Mark the batch run or cancelled: True for the one call (in any process) that settled
        it while it was unsettled and unexpired; False for every other."""
        now = self.clock()
        return await self.db.execute(SQL_SETTLE_BATCH, (outcome, now, batch_id, now)) == 1


def _batch(row: Row) -> Batch:
    return record(Batch, row, command=from_json(row["command"], {}))
