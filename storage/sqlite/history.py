"""Recent jobs: a requester's (the Slack App Home lists them), and everyone's finished ones
(how long jobs take here)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlite_utils import Database

from storage.job_records import Job, JobStatus
from storage.rows import job_from_row
from storage.rules import status_tuple
from storage.sqlite.base import StoreBase
from storage.sqlite.sql import fetch_all


class SqliteJobHistory(StoreBase):
    """Job history method of :class:`storage.sqlite.SqliteStore`."""

    async def recent_jobs(
        self,
        platform: str,
        requester_id: str,
        *,
        workspace_id: str | None = None,
        statuses: Iterable[JobStatus] = ("posted",),
        limit: int = 10,
    ) -> list[Job]:
        """The requester's newest jobs in ``statuses`` (in ``workspace_id`` when given)."""
        chosen = status_tuple(tuple(statuses))
        marks = ", ".join("?" * len(chosen))
        sql = (
            f"SELECT * FROM jobs WHERE platform = ? AND requester_id = ? AND status IN ({marks})"
            + (" AND workspace_id = ?" if workspace_id is not None else "")
            + " ORDER BY created_at DESC, id DESC LIMIT ?"
        )
        where = (workspace_id,) if workspace_id is not None else ()
        parameters = (platform, requester_id, *chosen, *where, max(limit, 0))

        def work(db: Database) -> list[Job]:
            return [job_from_row(row) for row in fetch_all(db, sql, parameters)]

        return await self._call(work)

    async def recent_posted_jobs(self, limit: int) -> list[Job]:
        """The newest jobs whose result was posted, of every requester, newest first."""
        sql = "SELECT * FROM jobs WHERE status = 'posted' ORDER BY created_at DESC, id DESC LIMIT ?"

        def work(db: Database) -> list[Job]:
            return [job_from_row(row) for row in fetch_all(db, sql, (max(limit, 0),))]

        return await self._call(work)
