"""Simulated time in tests, without a race against the wall clock.

A test freezes the simulator's time so that what must happen within some simulated span (three
chat requests within one rate-limit minute, jobs still in flight when a process is killed) does
so however slowly the machine runs, then moves it on at the moment the test decides.
"""

from __future__ import annotations

import asyncio

from simulator.chat import MINUTE
from simulator.clock import SimClock
from simulator.server import RunningSimulator

CHAT = "/v1/chat/completions"


def freeze(sim: RunningSimulator) -> None:
    """Simulated time stands still until it is advanced or :func:`resume` is called."""
    sim.state.clock = SimClock(sim.state.now())


def resume(sim: RunningSimulator) -> None:
    """Simulated time follows the wall clock again (jumping forward to it, never back), and
    what finished meanwhile is settled."""
    frozen_at = sim.state.now()
    sim.state.clock = SimClock()
    sim.state.advance(max(frozen_at - sim.state.now(), 0.0))


async def a_minute_passes_after_a_429(sim: RunningSimulator, timeout: float = 10.0) -> None:
    """Wait (bounded) until the simulator refused a chat request with 429, then move its clock on
    by its rate limit's minute, so that genbot's next try is let through. (Polled: the simulator
    records requests without telling anyone.)"""
    async with asyncio.timeout(timeout):
        while 429 not in [r.status for r in sim.state.requests_to(CHAT)]:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    sim.advance(MINUTE * sim.state.config.time_scale)
