"""Stopping a streaming answer, on whichever process streams it.

The process streaming an answer registers it by its stored turn for as long as it streams
(:meth:`StopRequests.streaming`), with how to end it (closing the provider's stream). A press of
⏹ Stop ends it at once when this process streams it; otherwise the request is announced to the
other processes sharing the database (``NOTIFY``, :class:`storage.AnswerStops`), each of which
listens while it runs (:meth:`StopRequests.start`) and ends the answer if it is one of its own.
On SQLite one process owns the database: nobody else could be streaming it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator

from bot.kernel import OUTAGE, backoff
from storage import AnswerStops, StorageError

log = logging.getLogger(__name__)

LISTEN_RETRY_SECONDS = 30.0
"""The longest pause before listening again after the connection was lost."""


class StopRequests:
    """The answers this process streams, by turn, and the stop requests of the others (see the
    module docstring). Started and stopped with the router (a service)."""

    def __init__(self, port: AnswerStops | None = None) -> None:
        self._port = port
        self._ends: dict[int, Callable[[], None]] = {}
        self._task: asyncio.Task[None] | None = None
        self.listening = asyncio.Event()
        """Set once this process hears the others' requests (tests wait for it)."""

    @contextlib.contextmanager
    def streaming(self, turn_id: int, end: Callable[[], None]) -> Iterator[None]:
        """While the block runs, a request to stop ``turn_id``'s answer calls ``end``."""
        self._ends[turn_id] = end
        try:
            yield
        finally:
            if self._ends.get(turn_id) is end:
                del self._ends[turn_id]

    def end_here(self, turn_id: int) -> bool:
        """End ``turn_id``'s answer if this process streams it; whether it did."""
        end = self._ends.get(turn_id)
        if end is None:
            return False
        end()
        return True

    async def request(self, turn_id: int) -> bool:
        """End ``turn_id``'s answer here, or ask the other processes to; False when nobody
        could be streaming it (it is over)."""
        if self.end_here(turn_id):
            return True
        return self._port is not None and await self._port.ask(turn_id)

    async def start(self) -> None:
        """Listen for the other processes' requests, where they share the database."""
        if self._port is not None and self._port.shared and self._task is None:
            self._task = asyncio.create_task(self._listening(), name="genbot-chat-stops")

    async def stop(self) -> None:
        """Stop listening."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _listening(self) -> None:
        assert self._port is not None
        failures = 0
        while True:
            try:
                async for turn_id in self._port.requests():
                    failures = 0
                    if turn_id is None:
                        self.listening.set()
                    elif self.end_here(turn_id):
                        log.info(
                            "stopped the answer of turn %d at another process's request", turn_id
                        )
            except StorageError as error:
                failures += 1
                self.listening.clear()
                OUTAGE.failed("chat stop listener", error)
            await asyncio.sleep(backoff(failures, most=LISTEN_RETRY_SECONDS))
