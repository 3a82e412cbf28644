"""The platform-message → job map: which job a pressed message belongs to."""

from __future__ import annotations

from typing import Final

from sqlite_utils import Database

from storage.job_records import Job, JobMessage, JobMessageKind
from storage.rows import job_from_row
from storage.rules import check_message_kind
from storage.sqlite.base import StoreBase
from storage.sqlite.jobs import insert_job_links
from storage.sqlite.sql import fetch_one, write_transaction

SQL_JOB_FOR_MESSAGE: Final = (
    "SELECT j.* FROM job_messages AS m JOIN jobs AS j ON j.id = m.job_id"
    " WHERE m.platform = ? AND m.channel_id = ? AND m.message_id = ?"
)


class SqliteMessageLinks(StoreBase):
    """Message → job methods of :class:`storage.sqlite.SqliteStore`."""

    async def link_message(
        self,
        platform: str,
        channel_id: str,
        message_id: str,
        job_id: str,
        kind: JobMessageKind = "result",
    ) -> None:
        """Map one platform message to a job (``kind``: progress, result or other)."""
        check_message_kind(kind)
        link = JobMessage(platform, channel_id, message_id, job_id, kind)

        def work(db: Database) -> None:
            with write_transaction(db):
                insert_job_links(db, [link])

        await self._call(work)

    async def job_for_message(self, platform: str, channel_id: str, message_id: str) -> Job | None:
        """The job a platform message belongs to (the button-press lookup), or None."""
        args = (platform, channel_id, message_id)
        row = await self._call(lambda db: fetch_one(db, SQL_JOB_FOR_MESSAGE, args))
        return None if row is None else job_from_row(row)
