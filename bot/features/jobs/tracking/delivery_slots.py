"""The slots deliveries run in: at most a fixed number at once, shared fairly among channels.

A delivery spends much of its time waiting for its channel's write window (a result is a write:
:mod:`bot.outbox.pacing`). Taken first come, first served, the slots fill with deliveries to
channels whose windows are full while results for channels with room wait behind them, and one
busy channel holds up every other. So when deliveries wait, a freed slot goes to the channel
with the fewest deliveries under way (the one waiting longest among equals), and within a
channel first come, first served. While slots are free a delivery takes one at once, whatever
its channel.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager


class DeliverySlots:
    """At most ``limit`` deliveries at once, handed out fairly among channels (see the module
    docstring); a channel is any hashable key."""

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 1)
        self.busy = 0
        """Slots taken now."""
        self._under_way: Counter[Hashable] = Counter()
        self._waiting: dict[Hashable, deque[asyncio.Future[None]]] = {}
        self._turns: dict[int, dict[Hashable, None]] = {}
        """The channels with deliveries waiting, by how many they have under way; within one
        count, in the order they joined it (least recently served first)."""

    @property
    def waiting(self) -> int:
        """Deliveries waiting for a slot."""
        return sum(len(queue) for queue in self._waiting.values())

    @asynccontextmanager
    async def slot(self, channel: Hashable) -> AsyncIterator[None]:
        """Hold one slot for the block, waiting for it (fairly) when all are taken."""
        await self._take(channel)
        try:
            yield
        finally:
            self._give_back(channel)

    async def _take(self, channel: Hashable) -> None:
        if self.busy < self.limit and not self._waiting:
            self._occupy(channel)
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._waiting.get(channel)
        if queue is None:
            queue = self._waiting[channel] = deque()
            self._join(channel)
        queue.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._give_back(channel)
            else:
                self._forget(channel, turn)
            raise

    def _forget(self, channel: Hashable, turn: asyncio.Future[None]) -> None:
        """A waiting delivery was cancelled before its turn (unless its turn was already
        skipped)."""
        queue = self._waiting.get(channel)
        if queue is not None and turn in queue:
            queue.remove(turn)
            if not queue:
                self._leave(channel)
                del self._waiting[channel]

    def _join(self, channel: Hashable) -> None:
        self._turns.setdefault(self._under_way[channel], {})[channel] = None

    def _leave(self, channel: Hashable) -> None:
        count = self._under_way[channel]
        del self._turns[count][channel]
        if not self._turns[count]:
            del self._turns[count]

    def _occupy(self, channel: Hashable) -> None:
        self.busy += 1
        self._under_way[channel] += 1

    def _give_back(self, channel: Hashable) -> None:
        waits = channel in self._waiting
        if waits:
            self._leave(channel)
        self.busy -= 1
        self._under_way[channel] -= 1
        if not self._under_way[channel]:
            del self._under_way[channel]
        if waits:
            self._join(channel)
        while self.busy < self.limit and self._waiting:
            self._hand_over()

    def _hand_over(self) -> None:
        """Give a free slot to the first waiting delivery of the channel with the fewest under
        way (among equals, the least recently served); a turn cancelled meanwhile is skipped."""
        channel = next(iter(self._turns[min(self._turns)]))
        queue = self._waiting[channel]
        turn = queue.popleft()
        self._leave(channel)
        if not turn.done():
            self._occupy(channel)
        if queue:
            self._join(channel)
        else:
            del self._waiting[channel]
        if not turn.done():
            turn.set_result(None)
