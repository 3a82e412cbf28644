"""A reply's deltas given as an async iterable (a test's script) read as
:class:`bot.api.TextDeltas` (:class:`PumpedDeltas`: a task of its own reads them as they come,
the renderer takes what it read), and any :class:`~bot.api.TextDeltas` read to the end
(:func:`read_all`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable

from bot.api import StreamEnd, TextDeltas


async def read_all(deltas: TextDeltas) -> list[str | StreamEnd]:
    """Everything ``deltas`` give until they are over, read as the renderer reads them."""
    given: list[str | StreamEnd] = []
    while True:
        await deltas.wait()
        ended = deltas.ended.is_set()
        arrived = deltas.read_nowait()
        given += arrived
        if ended and not arrived:
            return given


class PumpedDeltas:
    """``deltas`` read in a task of its own (started at the first read, cancelled by
    :meth:`aclose`); an error they raise is raised after what came before it was read."""

    def __init__(self, deltas: AsyncIterable[str | StreamEnd]) -> None:
        self._deltas = deltas
        self._arrived: list[str | StreamEnd] = []
        self._error: Exception | None = None
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.ended = asyncio.Event()

    async def wait(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._pump())
        while not self._arrived and self._error is None and not self.ended.is_set():
            self._changed.clear()
            await self._changed.wait()

    def read_nowait(self) -> list[str | StreamEnd]:
        if self._task is None:
            self._task = asyncio.create_task(self._pump())
        arrived, self._arrived = self._arrived, []
        if not arrived and self._error is not None:
            raise self._error
        return arrived

    async def aclose(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _pump(self) -> None:
        try:
            async for item in self._deltas:
                self._arrived.append(item)
                self._changed.set()
        except Exception as error:
            self._error = error
        finally:
            self.ended.set()
            self._changed.set()
