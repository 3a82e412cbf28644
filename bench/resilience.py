"""Resilience, full size (issue 8, items 5 and 6): the crash and fault scenarios of
``tests/resilience`` at benchmark scale, reported as tables (``make test`` runs small variants).

- crash: ``genbot run`` (web playground) with 100 image jobs submitted over six processes, each
  killed with ``kill -9`` at a seeded random moment (jobs in flight, results being delivered,
  jobs being created), then a seventh left to finish; every accepted job's result must be shown
  exactly once (:mod:`tests.resilience.crash`);
- faults: 200 user requests (imagine, diffusion, chat, button presses) against a simulator
  failing one request in ten; every request must end in its result or one clear error, and no
  job may be created or charged twice (:mod:`tests.resilience.faults`);
- hostile clients: upload floods, wrong-secret webhook floods and half-sent requests against
  ``genbot run``'s listeners, with the process's memory and log lines (:mod:`bench.hostile`).

``python -m bench resilience [--quick]``.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.hostile import hostile_table
from bench.report import Table
from tests.resilience.crash import crash_scenario
from tests.resilience.faults import FaultSize, fault_scenario


@dataclass(frozen=True)
class CrashSize:
    """Jobs submitted over ``kills`` killed processes; ``time_scale`` is the simulator's."""

    jobs: int
    kills: int
    time_scale: float
    seed: int = 8


CRASH_FULL = CrashSize(jobs=100, kills=6, time_scale=0.05)
CRASH_QUICK = CrashSize(jobs=40, kills=3, time_scale=0.03)
FAULTS_FULL = FaultSize(imagines=40, diffusions=20, chats=30, requests=200)
FAULTS_QUICK = FaultSize()
FAULT_SEEDS = (36, 6, 22)


async def crash_table(quick: bool) -> Table:
    size = CRASH_QUICK if quick else CRASH_FULL
    table = Table(
        f"Crash: kill -9 ×{size.kills} with {size.jobs} image jobs in flight",
        [
            "commands accepted",
            "jobs stored",
            "posted",
            "dropped unsent",
            "reported unconfirmed",
            "shown once",
            "shown twice",
            "never shown",
            "created twice",
            "seconds",
        ],
    )
    with tempfile.TemporaryDirectory(prefix="genbot-crash-") as directory:
        report = await crash_scenario(
            Path(directory),
            jobs=size.jobs,
            kills=size.kills,
            seed=size.seed,
            time_scale=size.time_scale,
        )
    posted = report.posted
    shown = Counter(report.posts[str(job["id"])] for job in posted)
    table.add(
        report.submitted,
        len(report.jobs),
        len(posted),
        sum(report.restarted(job) for job in report.jobs),
        len(report.unconfirmed),
        shown[1],
        sum(count for times, count in shown.items() if times > 1),
        shown[0],
        sum(count > 1 for count in report.creations.values()),
        report.seconds,
    )
    killed = "; ".join(
        ", ".join(f"{status} {count}" for status, count in at.items())
        for at in report.statuses_at_kills()
    )
    table.notes.append(f"Job statuses at each kill: {killed}.")
    problems = report.check()
    table.notes.append(
        "Every accepted job's result was shown exactly once."
        if not problems
        else "PROBLEMS: " + "; ".join(problems)
    )
    if report.resumed:
        table.notes.append(
            f"{report.resumed} command(s) accepted in the last moments before a kill were "
            "handled by the next process (their jobs left unsent, if any, are dropped unsent)."
        )
    if report.told_to_retry:
        table.notes.append(
            f"{len(report.told_to_retry)} command(s) whose progress message was already shown "
            "when the process died before submitting the job were told to be run again (their "
            "jobs are dropped unsent too)."
        )
    return table


async def fault_table(quick: bool) -> Table:
    size = FAULTS_QUICK if quick else FAULTS_FULL
    table = Table(
        f"Faults: {size.requests} requests, fault rate 0.1",
        [
            "seed",
            "results",
            "clear errors",
            "faults injected",
            "creations",
            "orphans (answer lost)",
            "seconds",
        ],
    )
    for seed in FAULT_SEEDS[:1] if quick else FAULT_SEEDS:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="genbot-faults-") as directory:
            try:
                report = await fault_scenario(Path(directory), seed=seed, size=size)
            except AssertionError as error:
                table.notes.append(f"seed {seed} FAILED: {error}")
                continue
        kinds = Counter(outcome.split(":")[0] for outcome in report.outcomes.values())
        table.add(
            seed,
            kinds["result"] + kinds["answer"],
            sum(kinds.values()) - kinds["result"] - kinds["answer"],
            sum(report.coverage.values()),
            report.ledger["creations"],
            report.ledger["orphans"],
            time.perf_counter() - started,
        )
    table.notes.append(
        "Clear errors: failure reports, refusals at creation, interrupted chat answers, "
        "error replies; never 'Something went wrong'. Every run checks that no job was created "
        "or charged twice (genbot never repeats a creation); orphans are tasks the provider "
        "created although its answer was lost and no webhook let genbot adopt them."
    )
    return table


async def main(quick: bool = False) -> list[Table]:
    """The benchmark as ``python -m bench resilience [--quick]`` runs it (the warnings genbot
    logs about the injected faults are not printed)."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        return [await crash_table(quick), await fault_table(quick), await hostile_table(quick)]
    finally:
        root.setLevel(level)
