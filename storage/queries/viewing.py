"""The channel each Slack user looks at beside genbot's Messages tab, shared by the processes
serving the app."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from storage.queries.base import Clock
from storage.sql.session import Database

SQL_SAVE: Final = (
    "INSERT INTO slack_channels_in_view (team_id, user_id, channel_id, at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (team_id, user_id) DO UPDATE SET channel_id = excluded.channel_id,"
    " at = excluded.at"
)
SQL_FIND: Final = (
    "SELECT channel_id FROM slack_channels_in_view WHERE team_id = ? AND user_id = ? AND at >= ?"
)


@dataclass
class ChannelsInView:
    """One row per (team, user): the channel they looked at last and when."""

    db: Database
    clock: Clock

    async def save_channel_in_view(self, team_id: str, user_id: str, channel_id: str) -> None:
        """``user_id`` looks at ``channel_id`` now (replacing the channel they looked at)."""
        values = (team_id, user_id, channel_id, self.clock())
        await self.db.execute(SQL_SAVE, values, repeatable=True)

    async def find_channel_in_view(self, team_id: str, user_id: str, within: float) -> str | None:
        """The channel ``user_id`` looked at last, when that was at most ``within`` seconds
        ago; else None."""
        row = await self.db.fetch_one(SQL_FIND, (team_id, user_id, self.clock() - within))
        return None if row is None else str(row["channel_id"])
