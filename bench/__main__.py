"""``python -m bench [name ...] [--quick] [--profile DIR] [--attribute DIR]``: run benchmarks and
print their tables.

Each benchmark is a module ``bench.<name>`` with ``async def main(quick: bool) -> list[Table]``;
those in ``PROFILED`` also take ``profile``, a folder for py-spy's samples of their processes,
and ``attribute``, a folder for their processes' callbacks timed (:mod:`bench.attribution`).
A benchmark that fails is reported and the others still run; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import shlex
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from bench.report import machine_description

BENCHMARKS = (
    "streaming",
    "tracking",
    "load",
    "storage",
    "storage_postgres",
    "archive",
    "resilience",
    "scale",
    "split",
)
PROFILED = ("scale",)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "names",
        nargs="*",
        metavar="name",
        help=f"benchmarks to run (default: all): {', '.join(BENCHMARKS)}",
    )
    parser.add_argument("--quick", action="store_true", help="smaller, time-compressed runs")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help=f"record py-spy profiles of each phase into DIR ({', '.join(PROFILED)} only)",
    )
    parser.add_argument(
        "--attribute",
        type=Path,
        metavar="DIR",
        help="time every event-loop callback of the processes, into DIR, and compare the same "
        f"work's CPU ({', '.join(PROFILED)} only)",
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(BENCHMARKS)}")
    for option in ("profile", "attribute"):
        if getattr(args, option) is not None and set(args.names) - set(PROFILED):
            parser.error(f"--{option} works with {', '.join(PROFILED)} only")
    return args


async def run(
    names: Sequence[str],
    quick: bool,
    profile: Path | None = None,
    attribute: Path | None = None,
) -> list[str]:
    """Run the benchmarks in order, printing each table; returns the names that failed."""
    failed: list[str] = []
    for name in names:
        started = time.perf_counter()
        try:
            module = importlib.import_module(f"bench.{name}")
            options = {"profile": profile, "attribute": attribute}
            extra = {key: value for key, value in options.items() if value is not None}
            tables = await module.main(quick, **extra)
        except Exception:
            failed.append(name)
            print(f"### {name}: FAILED\n\n```\n{traceback.format_exc()}```\n", flush=True)
            continue
        for table in tables:
            print(table.render(), end="\n\n", flush=True)
        print(f"({name}: {time.perf_counter() - started:.0f} s)\n", flush=True)
    return failed


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(sys.argv[1:] if argv is None else argv)
    names = args.names or list(BENCHMARKS)
    command = "python -m bench " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    print(f"# genbot benchmarks — `{command.strip()}`")
    print(f"Machine: {machine_description()}")
    print(f"Load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    failed = asyncio.run(run(names, args.quick, args.profile, args.attribute))
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
