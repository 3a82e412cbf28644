"""Slack installations (one per team and installing user) and OAuth states."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from storage.queries.base import Clock
from storage.records.platforms import InstallationToSave, SlackInstallation
from storage.sql.session import Database, Session, from_json, record, to_json

SQL_SAVE_INSTALLATION: Final = (
    "INSERT INTO slack_installations (enterprise_id, team_id, user_id, installed_at, data)"
    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (enterprise_id, team_id, user_id) DO UPDATE SET"
    " installed_at = excluded.installed_at, data = excluded.data"
)
SQL_FIND_INSTALLATION: Final = (
    "SELECT * FROM slack_installations WHERE enterprise_id = ? AND team_id = ?{}"
    " ORDER BY installed_at DESC, user_id LIMIT 1"
)
SQL_DELETE_INSTALLATIONS: Final = (
    "DELETE FROM slack_installations WHERE enterprise_id = ? AND team_id = ?{}"
)
SQL_ISSUE_STATE: Final = (
    "INSERT INTO oauth_states (state, expires_at) VALUES (?, ?)"
    " ON CONFLICT (state) DO UPDATE SET expires_at = excluded.expires_at"
)
SQL_CONSUME_STATE: Final = "DELETE FROM oauth_states WHERE state = ? RETURNING expires_at"
SQL_PRUNE_STATES: Final = "DELETE FROM oauth_states WHERE expires_at < ?"


def _of_user(user_id: str | None) -> tuple[str, tuple[str, ...]]:
    return ("", ()) if user_id is None else (" AND user_id = ?", (user_id,))


@dataclass
class SlackInstallations:
    """Slack OAuth installations per workspace (or organization), and OAuth states.

    Platform-free: the Slack adapter turns ``data`` to and from its SDK's installation objects.
    ``enterprise_id`` / ``team_id`` / ``user_id`` are ``""`` when absent."""

    db: Database
    clock: Clock

    async def save_slack_installation(self, installation: InstallationToSave) -> None:
        """Store an installation; one per (enterprise, team, installing user), replaced by a
        newer save (a reinstall, a token rotation)."""
        values = (
            installation.enterprise_id,
            installation.team_id,
            installation.user_id,
            installation.installed_at,
            to_json(dict(installation.data)),
        )
        await self.db.execute(SQL_SAVE_INSTALLATION, values, repeatable=True)

    async def find_slack_installation(
        self, enterprise_id: str, team_id: str, user_id: str | None = None
    ) -> SlackInstallation | None:
        """The newest installation of a team (or an organization, ``team_id`` ``""``), by
        ``user_id`` when given; None when there is none."""
        condition, user = _of_user(user_id)
        find = SQL_FIND_INSTALLATION.format(condition)
        row = await self.db.fetch_one(find, (enterprise_id, team_id, *user))
        return (
            None if row is None else record(SlackInstallation, row, data=from_json(row["data"], {}))
        )

    async def delete_slack_installations(
        self, enterprise_id: str, team_id: str, user_id: str | None = None
    ) -> int:
        """Forget a team's installations (only ``user_id``'s when given); how many."""
        condition, user = _of_user(user_id)
        delete = SQL_DELETE_INSTALLATIONS.format(condition)
        return await self.db.execute(delete, (enterprise_id, team_id, *user), repeatable=True)

    async def issue_oauth_state(self, state: str, expires_at: float) -> None:
        """Remember an OAuth ``state`` value until ``expires_at`` (expired ones are dropped
        now)."""

        async def work(tx: Session) -> None:
            await tx.execute(SQL_PRUNE_STATES, (self.clock(),))
            await tx.execute(SQL_ISSUE_STATE, (state, expires_at))

        await self.db.transaction(work)

    async def consume_oauth_state(self, state: str) -> bool:
        """True once for a remembered, unexpired ``state`` (it is forgotten), else False."""
        row = await self.db.fetch_one(SQL_CONSUME_STATE, (state,))
        return row is not None and float(row["expires_at"]) >= self.clock()
