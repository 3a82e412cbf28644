"""Loaded by every Python process started with this folder on ``PYTHONPATH`` (``site`` imports
``sitecustomize`` at startup): when ``BENCH_ATTRIBUTION`` names a folder, the process's
event-loop callbacks are timed by their thread's CPU time and named, before they run, by what
they run — a task's step by its coroutine (a group commit's,
:class:`~storage.queries.grouped.Grouped`, by the function it batches), any other callback by
its function — and the totals are written to
``<folder>/attribution-<pid>.jsonl`` every :data:`EVERY` seconds: one line per write, the
monotonic time and ``{name: [calls, cpu seconds]}`` so far. Read by :mod:`bench.attribution`.
Nothing else changes in the process; its callbacks cost a few microseconds more each."""

from __future__ import annotations

import asyncio.events
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

EVERY = 0.25
"""Seconds between two writes of the totals."""

_totals: dict[str, list[float]] = {}


def _name(callback: Any) -> str:
    """``T:<coroutine>`` for a task's step, ``C:<function>`` for another callback."""
    owner = getattr(callback, "__self__", None)
    get_coro = getattr(owner, "get_coro", None)
    if get_coro is None:
        return "C:" + getattr(callback, "__qualname__", type(callback).__name__)
    coro = get_coro()
    name = getattr(coro, "__qualname__", type(coro).__name__)
    frame = getattr(coro, "cr_frame", None)
    if frame is not None and name == "Grouped._drain":
        run = getattr(frame.f_locals.get("self"), "_run", None)
        name += "/" + getattr(run, "__qualname__", "?")
    return "T:" + name


def _install(folder: Path) -> None:
    run = asyncio.events.Handle._run
    thread_time = time.thread_time

    def timed(handle: asyncio.events.Handle) -> None:
        started = thread_time()
        name = _name(handle._callback)  # type: ignore[attr-defined]
        try:
            run(handle)
        finally:
            used = thread_time() - started
            total = _totals.get(name)
            if total is None:
                _totals[name] = [1, used]
            else:
                total[0] += 1
                total[1] += used

    asyncio.events.Handle._run = timed  # type: ignore[method-assign,assignment]
    path = folder / f"attribution-{os.getpid()}.jsonl"

    def write() -> None:
        while True:
            time.sleep(EVERY)
            totals = {name: list(total) for name, total in list(_totals.items())}
            with path.open("a") as file:
                file.write(json.dumps([time.monotonic(), totals]) + "\n")

    threading.Thread(target=write, name="bench-attribution", daemon=True).start()


_folder = os.environ.get("BENCH_ATTRIBUTION")
if _folder:
    _install(Path(_folder))
