"""What the webhook receiver needs from the rest of genbot, declared here and passed in by
``genbot`` (the tracker fits it)."""

from __future__ import annotations

from typing import Protocol, TypeVar


class NotifiedJob(Protocol):
    """A job a notification is for, as the receiver sees it: only its id (for logs)."""

    @property
    def id(self) -> str: ...


JobT = TypeVar("JobT", bound=NotifiedJob)


class TaskNotices(Protocol[JobT]):
    """Who authenticates task notifications and acts on them."""

    async def webhook_job(self, job_id: str, secret: str | None) -> JobT | None:
        """The job addressed as ``job_id`` when ``secret`` is its webhook secret, else None;
        asked before the body is read."""

    async def webhook_task_job(self, body: bytes, secret: str | None) -> JobT | None:
        """The job of a notification sent to the bare address, by the task its ``body``
        names, when ``secret`` is its webhook secret, else None."""

    async def on_webhook(self, job: JobT, body: bytes) -> int:
        """Act on ``body`` for ``job``; the HTTP status to answer."""
