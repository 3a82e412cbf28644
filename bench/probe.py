"""Event-loop lag and memory, measured while a benchmark runs."""

from __future__ import annotations

import asyncio
import resource
import time

PROBE_EVERY = 0.05
PAGE_BYTES = resource.getpagesize()


def rss_mb() -> float:
    """The process's resident set size now, in MB (Linux ``/proc/self/statm``)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * PAGE_BYTES / 1e6
    except (OSError, ValueError, IndexError):
        return 0.0


class Probe:
    """Measures event-loop lag (how late a ``PROBE_EVERY``-second sleep wakes) and peak RSS
    while :meth:`run` runs (cancel it to stop)."""

    def __init__(self) -> None:
        self.lag: list[float] = []
        self.peak_rss = 0.0

    async def run(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(PROBE_EVERY)
            self.lag.append(max(time.perf_counter() - started - PROBE_EVERY, 0.0))
            self.peak_rss = max(self.peak_rss, rss_mb())
