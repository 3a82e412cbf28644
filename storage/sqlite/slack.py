"""Slack installations (one per team and installing user) and OAuth states."""

from __future__ import annotations

from typing import Final

from sqlite_utils import Database

from storage.records import SlackInstallation
from storage.rows import from_json, to_json
from storage.sqlite.base import StoreBase
from storage.sqlite.sql import fetch_one, write_transaction

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


def _user_filter(user_id: str | None) -> tuple[str, tuple[str, ...]]:
    return ("", ()) if user_id is None else (" AND user_id = ?", (user_id,))


class SqliteSlackInstallations(StoreBase):
    """Slack installation methods of :class:`storage.sqlite.SqliteStore`."""

    async def save_slack_installation(self, installation: SlackInstallation) -> None:
        """Store an installation, replacing the same team's and user's earlier one."""
        values = (
            installation.enterprise_id,
            installation.team_id,
            installation.user_id,
            installation.installed_at,
            to_json(dict(installation.data)),
        )

        def work(db: Database) -> None:
            with write_transaction(db):
                db.conn.execute(SQL_SAVE_INSTALLATION, values)

        await self._call(work)

    async def find_slack_installation(
        self, enterprise_id: str, team_id: str, user_id: str | None = None
    ) -> SlackInstallation | None:
        """The newest installation of a team (by ``user_id`` when given), or None."""
        condition, extra = _user_filter(user_id)
        sql = SQL_FIND_INSTALLATION.format(condition)
        row = await self._call(lambda db: fetch_one(db, sql, (enterprise_id, team_id, *extra)))
        if row is None:
            return None
        return SlackInstallation(
            row["enterprise_id"],
            row["team_id"],
            row["user_id"],
            row["installed_at"],
            from_json(row["data"], {}),
        )

    async def delete_slack_installations(
        self, enterprise_id: str, team_id: str, user_id: str | None = None
    ) -> int:
        """Forget a team's installations (only ``user_id``'s when given); how many."""
        condition, extra = _user_filter(user_id)
        sql = SQL_DELETE_INSTALLATIONS.format(condition)

        def work(db: Database) -> int:
            with write_transaction(db):
                return db.conn.execute(sql, (enterprise_id, team_id, *extra)).rowcount

        return await self._call(work)

    async def issue_oauth_state(self, state: str, expires_at: float) -> None:
        """Remember an OAuth ``state`` until ``expires_at`` (expired ones are dropped now)."""

        def work(db: Database) -> None:
            with write_transaction(db):
                db.conn.execute(SQL_PRUNE_STATES, (self._now(),))
                db.conn.execute(SQL_ISSUE_STATE, (state, expires_at))

        await self._call(work)

    async def consume_oauth_state(self, state: str) -> bool:
        """True once for a remembered, unexpired ``state``; it is forgotten either way."""

        def work(db: Database) -> bool:
            with write_transaction(db):
                rows = db.conn.execute(SQL_CONSUME_STATE, (state,)).fetchall()
            return bool(rows) and float(rows[0][0]) >= self._now()

        return await self._call(work)
