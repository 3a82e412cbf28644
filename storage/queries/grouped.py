"""Group commit: the calls that arrive while one batch's transaction runs go together in the
next, so a busy process makes one transaction for many small writes and an idle one waits for
nobody (its call runs alone at once) — unless the batches gather (:data:`GATHER`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, Generic, TypeVar

Request = TypeVar("Request")
Answer = TypeVar("Answer")

GATHER: Final = 0.005
"""Seconds a gathering batch that starts after a pause waits for more calls before it runs.
For the platform-write paths (the write windows' reservations, the playground's saves): most of
their writes wait for a platform's window anyway (milliseconds to seconds), the rest are a
person's messages, where 5 ms does not show; they come a few milliseconds apart, as each
writer's task wakes, and without it each would run alone, a transaction and its round trips
apiece. A caller saving many at once sends them together (each would wait out the gather)."""


class Grouped(Generic[Request, Answer]):
    """``await grouped(request)``: ``run`` gets the requests waiting together, in the order they
    came, and answers each (same order); when it raises, every request of the batch gets the
    error. A caller cancelled while its batch runs may still have been served: its answer then
    goes to ``unclaimed`` (when given), so that what it took can be given back. A batch that
    starts after a pause waits ``gather`` seconds for more requests first."""

    def __init__(
        self,
        run: Callable[[Sequence[Request]], Awaitable[Sequence[Answer]]],
        *,
        unclaimed: Callable[[Answer], None] | None = None,
        gather: float = 0.0,
    ) -> None:
        self._run = run
        self._gather = gather
        self._unclaimed = unclaimed
        self._waiting: list[tuple[Request, asyncio.Future[Answer]]] = []
        self._runner: asyncio.Task[None] | None = None

    async def __call__(self, request: Request) -> Answer:
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting.append((request, future))
        if self._runner is None:
            self._runner = asyncio.create_task(self._drain())
        try:
            return await future
        except asyncio.CancelledError:
            answered = future.done() and not future.cancelled() and future.exception() is None
            if answered and self._unclaimed is not None:
                self._unclaimed(future.result())
            raise

    async def _drain(self) -> None:
        batch: list[tuple[Request, asyncio.Future[Answer]]] = []
        try:
            if self._gather > 0:
                await asyncio.sleep(self._gather)
            while self._waiting:
                batch, self._waiting = [w for w in self._waiting if not w[1].done()], []
                if not batch:
                    continue
                try:
                    answers = await self._run([request for request, _ in batch])
                except Exception as error:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(error)
                else:
                    for (_, future), answer in zip(batch, answers, strict=True):
                        if not future.done():
                            future.set_result(answer)
                        elif self._unclaimed is not None:
                            self._unclaimed(answer)
                batch = []
        finally:
            for _, future in batch + self._waiting:
                future.cancel()
            self._waiting = []
            self._runner = None
