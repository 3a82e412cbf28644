"""Slack installations and OAuth states on PostgreSQL."""

from __future__ import annotations

from typing import Final

from psycopg.types.json import Jsonb

from storage.postgres.base import PostgresBase, Query
from storage.records import SlackInstallation

SQL_SAVE_INSTALLATION: Final[Query] = (
    "INSERT INTO slack_installations (enterprise_id, team_id, user_id, installed_at, data)"
    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (enterprise_id, team_id, user_id) DO UPDATE SET"
    " installed_at = excluded.installed_at, data = excluded.data"
)
SQL_FIND_INSTALLATION: Final[Query] = (
    "SELECT * FROM slack_installations WHERE enterprise_id = %s AND team_id = %s"
    " AND (%s::text IS NULL OR user_id = %s) ORDER BY installed_at DESC, user_id LIMIT 1"
)
SQL_DELETE_INSTALLATIONS: Final[Query] = (
    "DELETE FROM slack_installations WHERE enterprise_id = %s AND team_id = %s"
    " AND (%s::text IS NULL OR user_id = %s)"
)
SQL_ISSUE_STATE: Final[Query] = (
    "INSERT INTO oauth_states (state, expires_at) VALUES (%s, %s)"
    " ON CONFLICT (state) DO UPDATE SET expires_at = excluded.expires_at"
)
SQL_CONSUME_STATE: Final[Query] = "DELETE FROM oauth_states WHERE state = %s RETURNING expires_at"
SQL_PRUNE_STATES: Final[Query] = "DELETE FROM oauth_states WHERE expires_at < %s"


class PostgresSlackInstallations(PostgresBase):
    """Slack installation methods of :class:`storage.postgres.PostgresStore`."""

    async def save_slack_installation(self, installation: SlackInstallation) -> None:
        """Store an installation, replacing the same team's and user's earlier one."""
        await self._execute(
            SQL_SAVE_INSTALLATION,
            (
                installation.enterprise_id,
                installation.team_id,
                installation.user_id,
                installation.installed_at,
                Jsonb(dict(installation.data)),
            ),
        )

    async def find_slack_installation(
        self, enterprise_id: str, team_id: str, user_id: str | None = None
    ) -> SlackInstallation | None:
        """The newest installation of a team (by ``user_id`` when given), or None."""
        row = await self._fetch_one(
            SQL_FIND_INSTALLATION, (enterprise_id, team_id, user_id, user_id)
        )
        if row is None:
            return None
        return SlackInstallation(
            row["enterprise_id"], row["team_id"], row["user_id"], row["installed_at"], row["data"]
        )

    async def delete_slack_installations(
        self, enterprise_id: str, team_id: str, user_id: str | None = None
    ) -> int:
        """Forget a team's installations (only ``user_id``'s when given); how many."""
        return await self._execute(
            SQL_DELETE_INSTALLATIONS, (enterprise_id, team_id, user_id, user_id)
        )

    async def issue_oauth_state(self, state: str, expires_at: float) -> None:
        """Remember an OAuth ``state`` until ``expires_at`` (expired ones are dropped now)."""
        async with self._transaction() as conn:
            await conn.execute(SQL_PRUNE_STATES, (self._now(),))
            await conn.execute(SQL_ISSUE_STATE, (state, expires_at))

    async def consume_oauth_state(self, state: str) -> bool:
        """True once for a remembered, unexpired ``state``; it is forgotten either way."""
        row = await self._fetch_one(SQL_CONSUME_STATE, (state,))
        return row is not None and float(row["expires_at"]) >= self._now()
