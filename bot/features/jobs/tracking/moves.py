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
        self._turn: list[tuple[JobMove, asyncio.Future[bool]]] | None = None
        self._sender: asyncio.Task[None] | None = None
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
        """:meth:`storage.JobWriter.transition`, sent with the other moves of this turn: the
        turn's first move starts the task that sends them, which starts when the turn ends."""
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if self._turn is None or self._sender is None or self._sender.done():
            self._turn = []
            self._sender = asyncio.create_task(self._send(self._turn), name="genbot-job-moves")
            self._sending.add(self._sender)
            self._sender.add_done_callback(self._sending.discard)
        self._turn.append((JobMove(job_id, from_statuses, to_status, fields), answer))
        return await answer

    async def _send(self, turn: list[tuple[JobMove, asyncio.Future[bool]]]) -> None:
        self._turn = None
        self.batches += 1
        try:
            moved = await self._store.transition_many([move for move, _ in turn])
        except asyncio.CancelledError:
            for _, answer in turn:
                answer.cancel()
            raise
        except Exception as error:
            for _, answer in turn:
                if not answer.done():
                    answer.set_exception(error)
            return
        for (_, answer), done in zip(turn, moved, strict=True):
            if not answer.done():
                answer.set_result(done)
