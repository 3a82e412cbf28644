"""Wake whoever waits on a job when the tracker or delivery changes it."""

from __future__ import annotations

import asyncio
from collections.abc import Collection

from storage import Job, JobReader, JobStatus


class JobWatch:
    """In-process change notifications per job id, backed by the store for the truth."""

    def __init__(self, store: JobReader) -> None:
        self._store = store
        self._events: dict[str, asyncio.Event] = {}

    def touch(self, job_id: str) -> None:
        """Tell waiters ``job_id`` may have changed."""
        event = self._events.pop(job_id, None)
        if event is not None:
            event.set()

    async def wait(self, job_id: str, statuses: Collection[JobStatus], timeout: float) -> Job:
        """The job once its status is in ``statuses``; ``TimeoutError`` after ``timeout`` s,
        ``KeyError`` if it does not exist."""
        async with asyncio.timeout(timeout):
            while True:
                event = self._events.setdefault(job_id, asyncio.Event())
                job = await self._store.get_job(job_id)
                if job is None:
                    raise KeyError(job_id)
                if job.status in statuses:
                    return job
                await event.wait()
