"""The platform-message → job map: which job a pressed message belongs to."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from sqlite_utils import Database

from storage.base import StoreBase
from storage.errors import StorageError
from storage.jobs import insert_job_links, job_from_row
from storage.records import Job, JobMessage, JobMessageKind
from storage.sql import fetch_all, fetch_one, write_transaction

SQL_JOB_FOR_MESSAGE: Final = (
    "SELECT j.* FROM job_messages AS m JOIN jobs AS j ON j.id = m.job_id"
    " WHERE m.platform = ? AND m.channel_id = ? AND m.message_id = ?"
)
SQL_JOB_ID_FOR_MESSAGE: Final = (
    "SELECT job_id FROM job_messages WHERE platform = ? AND channel_id = ? AND message_id = ?"
)
SQL_MESSAGES_OF_JOB: Final = "SELECT * FROM job_messages WHERE job_id = ? ORDER BY id"


class JobMessageStore(StoreBase):
    """Message → job methods of :class:`storage.Store`."""

    async def link_messages(self, links: Sequence[JobMessage]) -> None:
        """Map platform messages to their jobs (re-linking a message moves it)."""

        def work(db: Database) -> None:
            with write_transaction(db):
                insert_job_links(db, links)

        await self._call(work)

    async def link_message(
        self,
        platform: str,
        channel_id: str,
        message_id: str,
        job_id: str,
        kind: JobMessageKind = "result",
    ) -> None:
        """Map one platform message to a job (``kind``: progress, result or other)."""
        if kind not in ("progress", "result", "other"):
            raise StorageError(f"unknown job message kind {kind!r}")
        await self.link_messages([JobMessage(platform, channel_id, message_id, job_id, kind)])

    async def job_for_message(self, platform: str, channel_id: str, message_id: str) -> Job | None:
        """The job a platform message belongs to (the button-press lookup), or None."""
        args = (platform, channel_id, message_id)
        row = await self._call(lambda db: fetch_one(db, SQL_JOB_FOR_MESSAGE, args))
        return None if row is None else job_from_row(row)

    async def job_id_for_message(
        self, platform: str, channel_id: str, message_id: str
    ) -> str | None:
        """Like :meth:`job_for_message`, the id only (one index probe)."""
        args = (platform, channel_id, message_id)
        row = await self._call(lambda db: fetch_one(db, SQL_JOB_ID_FOR_MESSAGE, args))
        return None if row is None else str(row["job_id"])

    async def messages_for_job(self, job_id: str) -> list[JobMessage]:
        """Every platform message linked to a job, in link order."""
        rows = await self._call(lambda db: fetch_all(db, SQL_MESSAGES_OF_JOB, (job_id,)))
        return [
            JobMessage(r["platform"], r["channel_id"], r["message_id"], r["job_id"], r["kind"])
            for r in rows
        ]
