"""Simulated time: wall-clock time plus an offset that tests (or ``/_sim/advance``) can move."""

from __future__ import annotations

import time


class SimClock:
    """The simulator's notion of "now", in Unix seconds.

    By default it follows the wall clock; :meth:`advance` moves it forward without sleeping. With a
    ``start`` it is *manual*: it begins at ``start`` and moves only when advanced, so every
    timestamp and ``process_time`` a test sees is exactly reproducible.
    """

    def __init__(self, start: float | None = None) -> None:
        self._start = start
        self._offset = 0.0

    @property
    def manual(self) -> bool:
        """Whether time moves only through :meth:`advance`."""
        return self._start is not None

    def now(self) -> float:
        """The current simulated time, Unix seconds."""
        base = self._start if self._start is not None else time.time()
        return base + self._offset

    def advance(self, seconds: float) -> None:
        """Move simulated time forward by ``seconds`` (never backwards)."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        self._offset += seconds
