"""Shared helpers for benchmark output: percentiles, tables, the machine's description."""

from __future__ import annotations

import math
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

Cell = str | int | float | None


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` (0–1) percentile of ``values`` by linear interpolation; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * min(max(fraction, 0.0), 1.0)
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def fmt(value: Cell, digits: int = 2) -> str:
    """A table cell: floats with ``digits`` decimals, NaN and None as ``–``."""
    if value is None:
        return "–"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if math.isinf(value):
            return "∞"
        return f"{value:.{digits}f}"
    return str(value)


@dataclass
class Table:
    """A titled table printed as Markdown (readable in a terminal, pasteable in docs)."""

    title: str
    columns: Sequence[str]
    rows: list[Sequence[Cell]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    digits: int = 2

    def add(self, *cells: Cell) -> None:
        """Append one row; it must have one cell per column."""
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(cells)

    def render(self) -> str:
        """The table as Markdown text, notes after it."""
        texts = [[fmt(cell, self.digits) for cell in row] for row in self.rows]
        widths = [
            max([len(name), *(len(row[index]) for row in texts)])
            for index, name in enumerate(self.columns)
        ]

        def line(cells: Sequence[str]) -> str:
            return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

        out = [f"### {self.title}", "", line(self.columns)]
        out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        out.extend(line(row) for row in texts)
        if self.notes:
            out.append("")
            out.extend(self.notes)
        return "\n".join(out)


def cpu_model() -> str:
    """The CPU model name from ``/proc/cpuinfo`` (or the platform's processor string)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for text in cpuinfo:
                if text.lower().startswith("model name"):
                    return text.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def memory_gib() -> float:
    """Total memory in GiB from ``/proc/meminfo`` (NaN when unknown)."""
    try:
        with open("/proc/meminfo", encoding="utf-8") as meminfo:
            for text in meminfo:
                if text.startswith("MemTotal:"):
                    return int(text.split()[1]) / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        pass
    return math.nan


def machine_description() -> str:
    """One line: CPUs (``nproc``), CPU model, memory, Python version, OS."""
    cpus = os.cpu_count() or 0
    if hasattr(os, "sched_getaffinity"):
        cpus = len(os.sched_getaffinity(0))
    python = f"{platform.python_implementation()} {sys.version.split()[0]}"
    return (
        f"{cpus} CPUs (nproc) · {cpu_model()} · {fmt(memory_gib(), 1)} GiB RAM · "
        f"Python {python} · {platform.system()} {platform.release()}"
    )
