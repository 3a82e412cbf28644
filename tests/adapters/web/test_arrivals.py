"""Items taken in the groups they arrived in (adapters/web/arrivals.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from adapters.web.arrivals import together


class Feed:
    """An async iterator fed by the test; ``failure`` ends it with an error, ``None`` ends it."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[int | Exception | None] = asyncio.Queue()
        self.closed = asyncio.Event()

    async def items(self) -> AsyncIterator[int]:
        try:
            while (item := await self.queue.get()) is not None:
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            self.closed.set()


async def test_what_came_while_the_consumer_was_busy_comes_as_one_group() -> None:
    feed = Feed()
    groups = together(feed.items())
    feed.queue.put_nowait(1)
    assert await anext(groups) == [1]
    for item in (2, 3, 4):
        feed.queue.put_nowait(item)
    await asyncio.sleep(0.05)
    assert await anext(groups) == [2, 3, 4]
    feed.queue.put_nowait(5)
    assert await asyncio.wait_for(anext(groups), 5) == [5]
    feed.queue.put_nowait(None)
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(groups), 5)


async def test_an_error_comes_after_the_items_before_it() -> None:
    feed = Feed()
    groups = together(feed.items())
    for item in (1, 2, RuntimeError("lost")):
        feed.queue.put_nowait(item)
    await asyncio.sleep(0.05)
    assert await anext(groups) == [1, 2]
    with pytest.raises(RuntimeError, match="lost"):
        await asyncio.wait_for(anext(groups), 5)


async def test_a_consumer_that_stops_stops_the_reading() -> None:
    feed = Feed()
    async with contextlib.aclosing(together(feed.items())) as groups:
        feed.queue.put_nowait(1)
        assert await anext(groups) == [1]
    await asyncio.wait_for(feed.closed.wait(), 5)
