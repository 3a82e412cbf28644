"""One browser's open event stream on the playground (server-sent events).

A stream queues the events :class:`~adapters.web.hub.EventHub` delivers to it until the
request serving it takes them; one still holding ``max_pending`` events when another comes is
closed, and the browser reconnects. It remembers which other channels it was told are unread,
so that its page hears of each channel once, and once more when a mark first mentions its user.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

Payload = dict[str, Any]


@dataclass(eq=False)
class Subscriber:
    """One open event stream: a browser tab watching ``channel`` as ``user_id``."""

    channel: str
    user_id: str
    max_pending: int
    pending: deque[tuple[int | None, Payload]] = field(default_factory=deque)
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False
    marked: dict[str, bool] = field(default_factory=dict)
    """The channels this stream was told are unread, each with whether a mark of it mentioned
    the stream's user."""

    def news_of(self, channel: str, mention: str | None) -> bool:
        """Whether an unread mark of ``channel`` mentioning ``mention`` tells this stream's page
        something it was not told (the channel's first mark, or its first mention of the
        user); counted as told."""
        mentioned = mention == self.user_id
        told = self.marked.get(channel)
        if told is not None and (told or not mentioned):
            return False
        self.marked[channel] = mentioned
        return True

    def deliver(self, seq: int | None, payload: Payload) -> None:
        """Queue an event (``seq`` None: one that is not numbered); a stream too slow to keep
        up is closed (the browser reconnects)."""
        if self.closed:
            return
        if len(self.pending) >= self.max_pending:
            self.close()
            return
        self.pending.append((seq, payload))
        self.wakeup.set()

    def close(self) -> None:
        self.closed = True
        self.wakeup.set()

    async def next_batch(self, timeout: float) -> list[tuple[int | None, Payload]]:
        """The queued events, waiting at most ``timeout`` seconds for one (``[]`` on timeout)."""
        if not self.pending and not self.closed:
            try:
                async with asyncio.timeout(timeout):
                    await self.wakeup.wait()
            except TimeoutError:
                return []
        self.wakeup.clear()
        batch = list(self.pending)
        self.pending.clear()
        return batch
