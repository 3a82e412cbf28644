"""Recent jobs: a requester's (the Slack App Home lists them), and everyone's finished ones
(how long jobs take here), on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from storage.job_records import Job, JobStatus
from storage.postgres.base import PostgresBase, Query
from storage.rows import job_from_row
from storage.rules import status_tuple

SQL_RECENT: Final[Query] = (
    "SELECT * FROM jobs WHERE platform = %s AND requester_id = %s AND status = ANY(%s)"
    " AND (%s::text IS NULL OR workspace_id = %s) ORDER BY created_at DESC, id DESC LIMIT %s"
)

SQL_RECENT_POSTED: Final[Query] = (
    "SELECT * FROM jobs WHERE status = 'posted' ORDER BY created_at DESC, id DESC LIMIT %s"
)


class PostgresJobHistory(PostgresBase):
    """Job history method of :class:`storage.postgres.PostgresStore`."""

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
        chosen = list(status_tuple(tuple(statuses)))
        rows = await self._fetch_all(
            SQL_RECENT,
            (platform, requester_id, chosen, workspace_id, workspace_id, max(limit, 0)),
        )
        return [job_from_row(row) for row in rows]

    async def recent_posted_jobs(self, limit: int) -> list[Job]:
        """The newest jobs whose result was posted, of every requester, newest first."""
        rows = await self._fetch_all(SQL_RECENT_POSTED, (max(limit, 0),))
        return [job_from_row(row) for row in rows]
