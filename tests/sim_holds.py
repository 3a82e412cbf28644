"""A held simulator path let through one request at a time, when the test says (the
simulator's :meth:`~simulator.state.SimulatorState.hold`): a test sees what a client does with
one answer while its next call still waits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from simulator.server import RunningSimulator


class OneAtATime:
    """The requests to ``path`` wait, logged, until :meth:`let_through` (those waiting then)
    or :meth:`open` (every one from then on)."""

    def __init__(self, sim: RunningSimulator, path: str) -> None:
        self._sim = sim
        self._path = path
        self._gate = sim.state.hold(path)

    @property
    def logged(self) -> int:
        """Requests to the path the simulator logged so far (answered or waiting)."""
        return len(self._sim.state.requests_to(self._path))

    async def arrived(self, count: int, timeout: float = 10.0) -> None:
        """Wait (bounded) until ``count`` requests to the path were logged."""
        async with asyncio.timeout(timeout):
            while self.logged < count:  # noqa: ASYNC110
                await asyncio.sleep(0.005)

    def let_through(self) -> None:
        """Answer the requests waiting now; the next ones wait again."""
        waiting, self._gate = self._gate, asyncio.Event()
        self._sim.state.holds[self._path] = self._gate
        waiting.set()

    def open(self) -> None:
        """Stop holding the path."""
        self._sim.state.holds.pop(self._path, None)
        self._gate.set()


@asynccontextmanager
async def one_at_a_time(sim: RunningSimulator, path: str) -> AsyncIterator[OneAtATime]:
    """:class:`OneAtATime` on ``path`` for the block; the path opens on exit."""
    held = OneAtATime(sim, path)
    try:
        yield held
    finally:
        held.open()
