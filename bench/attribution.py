"""Where each genbot process's event loop spent its CPU, per phase, from the totals that
``bench/attributing/sitecustomize.py`` writes in every process started with
:func:`environment`; and what the same work costs in one process and in several.

The same work: the callbacks that ran about as many times in both runs (at least
:data:`MIN_CALLS`, counts within :data:`SAME_WITHIN` of each other; the same steps of the same
coroutines — parsing the same answers, reading the same responses). Their CPU in several
processes against one is what running more processes than the machine has cores costs code
that does not change with their number (caches and cores shared); the cluster's ratio beside
it includes that and whatever being several adds (smaller batches, the others' notices, the
shared windows)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

SITE = Path(__file__).parent / "attributing"
"""The folder whose ``sitecustomize`` times a process's callbacks."""
MIN_CALLS = 300
SAME_WITHIN = 0.05

Totals = Mapping[str, tuple[int, float]]
"""Callback name → (calls, CPU seconds)."""
Snapshot = tuple[float, Totals]
"""A process's totals at a monotonic moment."""


def environment(folder: Path) -> dict[str, str]:
    """The environment variables that make a Python process started with them write its
    totals into ``folder`` (``PYTHONPATH`` keeps what it was here after the site folder)."""
    paths = [str(SITE), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"PYTHONPATH": os.pathsep.join(paths), "BENCH_ATTRIBUTION": str(folder)}


def read(path: Path) -> list[Snapshot]:
    """The totals one process wrote, oldest first (a line cut short by its death is left
    out)."""
    snapshots: list[Snapshot] = []
    for line in path.read_text().splitlines():
        try:
            moment, totals = json.loads(line)
        except ValueError:
            continue
        snapshots.append((moment, {k: (int(v[0]), float(v[1])) for k, v in totals.items()}))
    return snapshots


def at(snapshots: Iterable[Snapshot], moment: float) -> Totals:
    """The totals last written at or before ``moment`` (none before the first)."""
    found: Totals = {}
    for written, totals in snapshots:
        if written > moment:
            break
        found = totals
    return found


def between(start: Totals, end: Totals) -> dict[str, tuple[int, float]]:
    """What was spent from ``start`` to ``end``, by name."""
    spent = {}
    for name, (calls, cpu) in end.items():
        before = start.get(name, (0, 0.0))
        spent[name] = (calls - before[0], cpu - before[1])
    return spent


def added(parts: Iterable[Totals]) -> dict[str, tuple[int, float]]:
    """Several processes' totals, name by name."""
    whole: dict[str, tuple[int, float]] = {}
    for part in parts:
        for name, (calls, cpu) in part.items():
            before = whole.get(name, (0, 0.0))
            whole[name] = (before[0] + calls, before[1] + cpu)
    return whole


def phase(folder: Path, start: float, end: float) -> dict[str, tuple[int, float]]:
    """What every process that wrote into ``folder`` spent from ``start`` to ``end``."""
    recorded = [read(path) for path in sorted(folder.glob("attribution-*.jsonl"))]
    return added(between(at(s, start), at(s, end)) for s in recorded)


@dataclass(frozen=True)
class SameWork:
    """The callbacks that ran about as often in one process as in several (``names``), their
    calls in each, and their CPU seconds in each."""

    names: tuple[str, ...]
    calls: tuple[int, int]
    one: float
    several: float

    @property
    def ratio(self) -> float:
        """Their CPU in several processes against one (NaN without any)."""
        return self.several / self.one if self.one > 0 else float("nan")


def same_work(one: Totals, several: Totals) -> SameWork:
    """The same work in ``one`` process's totals and ``several``'s (see the module
    docstring)."""
    names = []
    for name, (calls, _) in one.items():
        other = several.get(name, (0, 0.0))[0]
        alike = abs(other - calls) <= SAME_WITHIN * calls
        if calls >= MIN_CALLS and other >= MIN_CALLS and alike:
            names.append(name)
    names.sort(key=lambda name: -one[name][1])
    return SameWork(
        tuple(names),
        (sum(one[n][0] for n in names), sum(several[n][0] for n in names)),
        sum(one[n][1] for n in names),
        sum(several[n][1] for n in names),
    )


def grown(one: Totals, several: Totals) -> list[str]:
    """The callbacks whose CPU grew most from ``one`` process's totals to ``several``'s, most
    first (then by name), each told as
    ``name +seconds (before → after s, calls before → after)``."""
    names = sorted(
        set(one) | set(several),
        key=lambda n: (one.get(n, (0, 0.0))[1] - several.get(n, (0, 0.0))[1], n),
    )
    told = []
    for name in names:
        (calls, cpu), (more_calls, more_cpu) = one.get(name, (0, 0.0)), several.get(name, (0, 0.0))
        if more_cpu <= cpu:
            break
        told.append(
            f"{name} +{more_cpu - cpu:.2f} ({cpu:.2f} → {more_cpu:.2f} s, {calls} → {more_calls})"
        )
    return told
