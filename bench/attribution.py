"""Where each genbot process's event loop spent its CPU, per phase, from the totals that
``bench/attributing/sitecustomize.py`` writes in every process started with
:func:`environment`; and what the same work costs in one process and in several.

Two measures of what the machine charges for running several processes (and PostgreSQL) on
its cores, whatever they run:

- a fixed piece of pure Python each process times every 0.1 s in a thread of its own (its CPU
  per run in several processes against one: the same work exactly);
- the callbacks that ran about as many times in both runs (at least :data:`MIN_CALLS`, counts
  within :data:`SAME_WITHIN` of each other: the same steps of the same coroutines — parsing the
  same answers, reading the same responses), their CPU per call in several processes against
  one, weighted by one process's CPU. An upper bound of the machine's charge: a step whose count
  does not change may still do more in several processes (rows and notices of the others,
  retries within it), and each process warms its own caches (specialised bytecode, prepared
  statements) on a third of the calls.

The cluster's ratio beside them includes the machine's charge and whatever being several adds
(smaller batches, the others' notices, the shared windows)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

SITE = Path(__file__).parent / "attributing"
"""The folder whose ``sitecustomize`` times a process's callbacks."""
PROBE = "~probe"
"""The name the site counts its fixed probe under."""
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
    """The totals at ``moment``: between two writes, each name's share of the way from the
    one before to the one after (its calls rounded); none before the first; the last after
    it."""
    before: Snapshot | None = None
    for written, totals in snapshots:
        if written >= moment:
            if before is None:
                return {} if written > moment else totals
            share = (moment - before[0]) / (written - before[0])
            return {
                name: (
                    round(calls_before + share * (calls - calls_before)),
                    cpu_before + share * (cpu - cpu_before),
                )
                for name, (calls, cpu) in totals.items()
                for calls_before, cpu_before in [before[1].get(name, (0, 0.0))]
            }
        before = (written, totals)
    return {} if before is None else before[1]


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
    """The callbacks that ran about as often in one process as in several (``names``, most
    CPU in one process first), their calls in each, and per name one process's CPU seconds
    (``cpus``) and the CPU per call in several against one (``ratios``)."""

    names: tuple[str, ...]
    calls: tuple[int, int]
    cpus: tuple[float, ...]
    ratios: tuple[float, ...]

    @property
    def one(self) -> float:
        """Their CPU seconds in one process."""
        return sum(self.cpus)

    @property
    def ratio(self) -> float:
        """Their CPU per call in several processes against one, weighted by one process's CPU
        (NaN without any)."""
        if self.one <= 0:
            return float("nan")
        return sum(r * cpu for r, cpu in zip(self.ratios, self.cpus, strict=True)) / self.one


def same_work(one: Totals, several: Totals) -> SameWork:
    """The same work in ``one`` process's totals and ``several``'s (see the module
    docstring); the probe and other names starting with ``~`` are not callbacks."""
    names = []
    for name, (calls, cpu) in one.items():
        other, other_cpu = several.get(name, (0, 0.0))
        alike = abs(other - calls) <= SAME_WITHIN * calls
        timed = cpu > 0 and other_cpu > 0
        if not name.startswith("~") and min(calls, other) >= MIN_CALLS and alike and timed:
            names.append(name)
    names.sort(key=lambda name: (-one[name][1], name))
    return SameWork(
        tuple(names),
        (sum(one[n][0] for n in names), sum(several[n][0] for n in names)),
        tuple(one[n][1] for n in names),
        tuple(per_call(several, n) / per_call(one, n) for n in names),
    )


def per_call(totals: Totals, name: str) -> float:
    """CPU seconds per call of ``name`` (NaN without a call)."""
    calls, cpu = totals.get(name, (0, 0.0))
    return cpu / calls if calls else float("nan")


def probe_ratio(one: Totals, several: Totals) -> float:
    """The fixed probe's CPU per run in several processes against one (see the module
    docstring; NaN when either did not run it)."""
    return per_call(several, PROBE) / per_call(one, PROBE)


def grown(one: Totals, several: Totals) -> list[str]:
    """The callbacks whose CPU grew most from ``one`` process's totals to ``several``'s, most
    first (then by name; not the probe), each told as
    ``name +seconds (before → after s, calls before → after)``."""
    names = sorted(
        (set(one) | set(several)) - {PROBE},
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
