"""Job moves gathered per turn of the event loop: the compare-and-set moves that coroutines ask
for in one turn (the records of one multi_fetch answer, applied side by side) go to storage
together (:meth:`storage.JobWriter.transition_many`), one batch instead of a statement each."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from storage import JobMove, JobStatus, JobWriter


class MoveBatch:
    """Collects :meth:`transition` calls and sends them once the event loop's current turn
    ends; each caller gets its own move's answer (or the batch's error)."""

    def __init__(self, store: JobWriter) -> None:
        self._store = store
        self._pending: list[tuple[JobMove, asyncio.Future[bool]]] = []
        self._sending: set[asyncio.Task[None]] = set()
        self.batches = 0
        """How many batches went to storage (for tests and benchmarks)."""

    async def transition(
        self,
        job_id: str,
        from_statuses: JobStatus | Iterable[JobStatus],
        to_status: JobStatus,
        **fields: Any,
    ) -> bool:
        """:meth:`storage.JobWriter.transition`, sent with the other moves of this turn."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[bool] = loop.create_future()
        if not self._pending:
            loop.call_soon(self._send_pending)
        self._pending.append((JobMove(job_id, from_statuses, to_status, fields), answer))
        return await answer

    def _send_pending(self) -> None:
        pending, self._pending = self._pending, []
        task = asyncio.create_task(self._send(pending), name="genbot-job-moves")
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, pending: list[tuple[JobMove, asyncio.Future[bool]]]) -> None:
        self.batches += 1
        try:
            moved = await self._store.transition_many([move for move, _ in pending])
        except asyncio.CancelledError:
            for _, answer in pending:
                answer.cancel()
            raise
        except Exception as error:
            for _, answer in pending:
                if not answer.done():
                    answer.set_exception(error)
            return
        for (_, answer), done in zip(pending, moved, strict=True):
            if not answer.done():
                answer.set_result(done)
