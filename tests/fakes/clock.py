"""A virtual clock for timing-sensitive core code (the stream renderer, the write windows).

``FakeClock.clock`` is a :class:`bot.outbox.pacing.Clock` whose ``sleep`` parks the caller until the
driver moves virtual time (and whose ``call_later`` calls back then). ``await fake.run(coro)``
drives: it lets every runnable task settle, then jumps time to the earliest sleeper and wakes it,
until ``coro`` is done. Nothing waits on wall-clock time, so results are deterministic and fast.
A call to a real peer (a database) made inside :meth:`FakeClock.held` takes no virtual time: the
driver waits for it before moving on.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from bot.outbox.pacing import Clock

T = TypeVar("T")

SETTLE_ROUNDS = 30


class Deadlock(AssertionError):
    """Nothing is runnable and nobody sleeps, yet the driven coroutine is not done."""


class FakeClock:
    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._held = 0
        self._released = asyncio.Event()

    @property
    def clock(self) -> Clock:
        return Clock(monotonic=self.monotonic, sleep=self.sleep, call_later=self.call_later)

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._order), future))
        await future

    def call_later(self, seconds: float, callback: Callable[[], None]) -> asyncio.Future[None]:
        """Call ``callback`` once virtual time is ``seconds`` on, unless the future returned is
        cancelled first."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda done: None if done.cancelled() else callback())
        heapq.heappush(self._sleepers, (self.now + max(seconds, 0.0), next(self._order), future))
        return future

    def pending(self) -> int:
        """How many sleeps and timers wait for virtual time to move (neither ended nor
        cancelled)."""
        return sum(not future.done() for _, _, future in self._sleepers)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Time stands still inside: for a call to a real peer, under way while no task is
        runnable (the driver would otherwise take it for idle and move time on)."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held:
                self._released.set()
                self._released = asyncio.Event()

    async def _settle(self, rounds: int = SETTLE_ROUNDS) -> None:
        for _ in range(rounds):
            await asyncio.sleep(0)
        while self._held:
            await self._released.wait()
            for _ in range(rounds):
                await asyncio.sleep(0)

    def _advance(self) -> bool:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)
        if not self._sleepers:
            return False
        self.now = max(self.now, self._sleepers[0][0])
        while self._sleepers and self._sleepers[0][0] <= self.now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)
        return True

    async def run(self, work: Awaitable[T], *, max_virtual_seconds: float = 10_000.0) -> T:
        """Drive virtual time until ``work`` finishes (bounded in virtual time)."""
        task = asyncio.ensure_future(work)
        limit = self.now + max_virtual_seconds
        try:
            while not task.done():
                await self._settle()
                if task.done():
                    break
                if not self._advance():
                    await self._settle(SETTLE_ROUNDS * 10)
                    if not task.done() and not self._advance():
                        raise Deadlock("no task is runnable and none sleeps")
                if self.now > limit:
                    raise AssertionError(f"still running after {max_virtual_seconds} virtual s")
            return task.result()
        finally:
            if not task.done():
                task.cancel()
