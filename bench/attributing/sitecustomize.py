"""Loaded by every Python process started with this folder on ``PYTHONPATH`` (``site`` imports
``sitecustomize`` at startup; a distribution's own ``sitecustomize`` is then not loaded in
those processes): when ``BENCH_ATTRIBUTION`` names a folder, the process's event-loop
callbacks are timed by their thread's CPU time (waits for a core or the GIL not counted) and
named, before they run, by what they run — a task's step by its coroutine (a group commit's,
:class:`~storage.queries.grouped.Grouped`, by the function it batches), any other callback by
its function. A thread of its own times a fixed piece of pure Python every :data:`PROBE_EVERY`
seconds (:data:`PROBE`: the same work in every process, whatever it runs). The totals are written
to ``<folder>/attribution-<pid>.jsonl`` every :data:`EVERY` seconds and when the process exits:
one line per write, the monotonic time and ``{name: [calls, cpu seconds]}`` so far. Read by
:mod:`bench.attribution`. Nothing else changes in the process; each callback costs it a few
microseconds more (the naming and the two clock reads are not in its time), the probe about 1 %
of a core."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

EVERY = 0.25
"""Seconds between two writes of the totals."""
PROBE = "~probe"
"""The name the fixed piece of work is counted under."""
PROBE_EVERY = 0.1
PROBE_ROUNDS = 150

_totals: dict[str, tuple[int, float]] = {}


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


def _add(name: str, cpu: float) -> None:
    calls, spent = _totals.get(name, (0, 0.0))
    _totals[name] = (calls + 1, spent + cpu)


def probe() -> float:
    """The fixed piece of work, once: the thread CPU seconds it took (dicts, strings and
    JSON, as an event loop's callbacks do)."""
    import json
    import time

    started = time.thread_time()
    kept: dict[int, str] = {}
    for n in range(PROBE_ROUNDS):
        kept[n % 97] = json.dumps({"id": n, "status": "in flight", "keys": [n, n + 1]})
        json.loads(kept.get(n * 7 % 97, "{}"))
    return time.thread_time() - started


def _install(folder: Path) -> None:
    import asyncio.events
    import atexit
    import json
    import threading
    import time

    run = asyncio.events.Handle._run
    thread_time = time.thread_time

    def timed(handle: asyncio.events.Handle) -> None:
        name = _name(handle._callback)  # type: ignore[attr-defined]
        started = thread_time()
        try:
            run(handle)
        finally:
            _add(name, thread_time() - started)

    asyncio.events.Handle._run = timed  # type: ignore[method-assign,assignment]
    path = folder / f"attribution-{os.getpid()}.jsonl"

    def write() -> None:
        line = json.dumps([time.monotonic(), dict(_totals)]) + "\n"
        with path.open("a") as file:
            file.write(line)

    def writing() -> None:
        while True:
            time.sleep(EVERY)
            write()

    def probing() -> None:
        while True:
            time.sleep(PROBE_EVERY)
            _add(PROBE, probe())

    atexit.register(write)
    threading.Thread(target=writing, name="bench-attribution", daemon=True).start()
    threading.Thread(target=probing, name="bench-probe", daemon=True).start()


_folder = os.environ.get("BENCH_ATTRIBUTION")
if _folder:
    _install(Path(_folder))
