"""Items of an async iterator taken in the groups they arrived in: what came while the consumer
was busy with one group is the next, so a busy consumer handles many at once (one read of the
database for many notices) and an idle one handles each as it comes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TypeVar

T = TypeVar("T")


async def together(source: AsyncIterator[T]) -> AsyncGenerator[list[T], None]:
    """``source``'s items, in order, in lists of at least one: each list holds what arrived
    since the previous one was handed out. ``source`` is read in a task of its own; when it
    fails, its error is raised after the items that came before it; when the consumer stops,
    reading stops (``source`` is cancelled where it waits)."""
    arrived: list[T] = []
    failure: list[Exception] = []
    ended = asyncio.Event()
    came = asyncio.Event()

    async def read() -> None:
        try:
            async for item in source:
                arrived.append(item)
                came.set()
        except Exception as error:
            failure.append(error)
        finally:
            ended.set()
            came.set()

    reader = asyncio.create_task(read(), name="genbot-arrivals")
    try:
        while True:
            if not arrived and not ended.is_set():
                await came.wait()
            came.clear()
            if arrived:
                group = arrived[:]
                arrived.clear()
                yield group
            elif ended.is_set():
                if failure:
                    raise failure[0]
                return
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
