"""The pace a request body must keep: after a grace period, a body still being waited for must
arrive at a floor of bytes per second, measured each :data:`PACE_SECONDS`, or its reader gets
the listener's error (see :mod:`adapters.listener`). A body the handler has not started reading
yet is buffered by aiohttp, so only seconds in which the handler waited for it count."""

from __future__ import annotations

import asyncio

from aiohttp import StreamReader

PACE_SECONDS = 1.0
"""How often a body's pace is measured."""


class BodyPace:
    """Ends the reading of ``content`` with ``too_slow()`` when, each :data:`PACE_SECONDS`
    after ``grace_seconds``, the reader was waiting for the body (nothing of it buffered) and
    less than ``floor_bytes_per_second`` of it arrived per second since the last look."""

    def __init__(
        self,
        content: StreamReader,
        *,
        floor_bytes_per_second: int,
        grace_seconds: float,
        too_slow: type[BaseException],
    ) -> None:
        self._content = content
        self._floor = floor_bytes_per_second * PACE_SECONDS
        self._too_slow = too_slow
        self._seen = content.total_bytes
        self._loop = asyncio.get_running_loop()
        self._timer = self._loop.call_later(grace_seconds, self._look)

    def _look(self) -> None:
        content = self._content
        if content.is_eof():
            return
        received = content.total_bytes
        waiting = not getattr(content, "_size", 0)
        if waiting and received - self._seen < self._floor:
            content.set_exception(self._too_slow())
            return
        self._seen = received
        self._timer = self._loop.call_later(PACE_SECONDS, self._look)

    def cancel(self) -> None:
        """Stop measuring (the request is over)."""
        self._timer.cancel()
