"""Benchmark 3 — load: a hundred concurrent chat streams and a thousand jobs in one process.

One genbot (:mod:`bench.app`, chat engine included) talks to a simulator in a child process
(:mod:`bench.simproc`, ``time_scale`` 1: chat at its natural pace, a fast grid in ~20 s) and
answers on a fake platform with Discord's limits (5 writes per 5 s per channel, 50 ms round
trip). Phases, in order, each measured on its own:

- ``first answer``: one chat answer right after start (cold caches: the tokenizer loads);
- ``idle``: nothing but the probe (the floor of the measurement);
- ``chat``: ``streams`` users, each in their own DM, ask ``turns`` questions in a row
  (``words: N`` answers);
- ``submit N jobs``: ``jobs`` users send ``/imagine`` at once (one channel each);
- ``chat + jobs in flight``: the same chat load again, while those jobs are in flight;
- ``jobs finish``: until every job's result is posted (the tracker polls, delivery posts).

A probe task sleeps ``PROBE_EVERY`` seconds in a loop and records the overshoot (event-loop lag)
and the resident set size. CPU seconds are the process's user + system time over the phase
(the simulator's own CPU is in the child and not counted); tokens are the completion tokens
genbot recorded for the chat answers of the phase.

``python -m bench load`` runs the phases in a fresh child process (``--child``), so memory from
other benchmarks does not count, and prints the table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import tempfile
import time
from collections.abc import Coroutine, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.app import BenchBot, running_bot
from bench.platform import DISCORD_PROFILE, BenchPlatform
from bench.probe import PROBE_EVERY, Probe
from bench.report import Table, percentile
from bench.simproc import ROOT, simulator_process
from bench.tracking import imagine, wait_settled
from bot.kernel import Place, User, UserMessage
from storage import IN_FLIGHT_STATUSES

IN_FLIGHT = ", ".join(f"'{status}'" for status in sorted(IN_FLIGHT_STATUSES))
TOKENS_SQL = "SELECT COALESCE(SUM(tokens_completion), 0) FROM usage WHERE kind = 'chat'"


@dataclass(frozen=True)
class LoadConfig:
    """What to run."""

    streams: int = 100
    turns: int = 2
    words: int = 200
    jobs: int = 1000
    mode: str = "fast"
    time_scale: float = 1.0
    idle_seconds: float = 3.0
    deadline: float = 300.0
    directory: str | None = None


FULL = LoadConfig()
QUICK = LoadConfig(streams=30, jobs=200, words=120, time_scale=0.5, idle_seconds=1.0)


@dataclass
class Phase:
    """One phase's figures."""

    name: str
    seconds: float = 0.0
    lag: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    cpu_seconds: float = 0.0
    tokens: int = 0
    answers: int = 0
    in_flight_before: int = 0
    in_flight_after: int = 0
    jobs_posted: int = 0
    writes: int = 0
    rate_limited: int = 0
    finished: bool = True


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def chat_tokens(bot: BenchBot) -> int:
    row = await bot.store.db.run(lambda db: db.conn.execute(TOKENS_SQL).fetchone())
    return int(row[0])


async def chat_load(bot: BenchBot, config: LoadConfig, tag: str) -> int:
    """``streams`` users ask ``turns`` questions each, concurrently; returns answers given."""
    answered = 0

    async def user(index: int) -> None:
        nonlocal answered
        place = Place("bench", "g1", f"dm-{tag}-{index}", is_dm=True)
        person = User(f"chatter{index}", f"Chatter {index}")
        for turn in range(config.turns):
            await bot.core.handle(
                UserMessage(
                    user=person,
                    place=place,
                    message_id=f"{tag}-{index}-{turn}",
                    text=f"words: {config.words} (turn {turn})",
                )
            )
            answered += 1

    await asyncio.gather(*(user(index) for index in range(config.streams)))
    return answered


async def count_jobs(bot: BenchBot, statuses: str) -> int:
    """How many jobs are in one of ``statuses`` (an SQL list of quoted names)."""
    sql = f"SELECT COUNT(*) FROM jobs WHERE status IN ({statuses})"
    row = await bot.store.db.run(lambda db: db.conn.execute(sql).fetchone())
    return int(row[0])


async def measured(
    name: str, bot: BenchBot, work: Coroutine[Any, Any, Any], *, answers: int = 0
) -> Phase:
    """Run ``work`` under the probe and return the phase's figures."""
    phase = Phase(name, answers=answers)
    probe = Probe()
    probing = asyncio.create_task(probe.run())
    tokens, cpu, refused = await chat_tokens(bot), cpu_seconds(), bot.platform.rate_limited
    accepted = bot.platform.accepted
    phase.in_flight_before = await count_jobs(bot, IN_FLIGHT)
    started = time.monotonic()
    try:
        await work
    except TimeoutError:
        phase.finished = False
    phase.seconds = time.monotonic() - started
    phase.cpu_seconds = cpu_seconds() - cpu
    probing.cancel()
    await asyncio.gather(probing, return_exceptions=True)
    phase.lag, phase.peak_rss_mb = probe.lag, probe.peak_rss
    phase.tokens = await chat_tokens(bot) - tokens
    phase.rate_limited = bot.platform.rate_limited - refused
    phase.writes = bot.platform.accepted - accepted
    phase.in_flight_after = await count_jobs(bot, IN_FLIGHT)
    phase.jobs_posted = await count_jobs(bot, "'posted'")
    return phase


async def run_load(config: LoadConfig = FULL) -> list[Phase]:
    """Every phase, in order, in this process."""
    answers = config.streams * config.turns
    with tempfile.TemporaryDirectory(prefix="genbot-bench-", dir=config.directory) as directory:
        async with (
            simulator_process(time_scale=config.time_scale) as sim,
            running_bot(
                sim.base_url,
                Path(directory) / "load.db",
                platform=BenchPlatform(DISCORD_PROFILE, latency=0.05),
                poll_interval=1.0,
                chat=True,
            ) as bot,
        ):

            async def submit_all() -> None:
                await asyncio.gather(
                    *(
                        bot.core.handle(imagine(i, config.jobs, config.mode))
                        for i in range(config.jobs)
                    )
                )

            async def bounded(work: Coroutine[Any, Any, Any]) -> None:
                async with asyncio.timeout(config.deadline):
                    await work

            one = LoadConfig(streams=1, turns=1, words=config.words)
            return [
                await measured("first answer", bot, chat_load(bot, one, "cold"), answers=1),
                await measured("idle", bot, asyncio.sleep(config.idle_seconds)),
                await measured("chat", bot, chat_load(bot, config, "a"), answers=answers),
                await measured(f"submit {config.jobs} jobs", bot, bounded(submit_all())),
                await measured(
                    "chat + jobs in flight", bot, chat_load(bot, config, "b"), answers=answers
                ),
                await measured("jobs finish", bot, bounded(wait_settled(bot, config.jobs))),
            ]


def load_table(phases: Sequence[Phase], config: LoadConfig, max_rss_mb: float) -> Table:
    """The phases side by side."""
    table = Table(
        f"Load: {config.streams} chat streams + {config.jobs} in-flight jobs in one process",
        [
            "phase",
            "s",
            "loop lag ms p50",
            "p99",
            "max",
            "peak RSS MB",
            "CPU s",
            "tokens",
            "CPU s / 1000 tokens",
            "answers",
            "jobs in flight",
            "jobs posted",
            "writes",
            "429s",
        ],
    )
    for phase in phases:
        table.add(
            phase.name if phase.finished else f"{phase.name} (cut at {config.deadline:.0f} s)",
            phase.seconds,
            percentile(phase.lag, 0.5) * 1000,
            percentile(phase.lag, 0.99) * 1000,
            max(phase.lag, default=0.0) * 1000,
            phase.peak_rss_mb,
            phase.cpu_seconds,
            phase.tokens,
            phase.cpu_seconds / phase.tokens * 1000 if phase.tokens else None,
            phase.answers,
            f"{phase.in_flight_before}→{phase.in_flight_after}",
            phase.jobs_posted,
            phase.writes,
            phase.rate_limited,
        )
    table.notes = [
        f"Chat: {config.streams} DMs × {config.turns} turns of `words: {config.words}`; jobs: "
        f"{config.jobs} `/imagine --{config.mode}`, one channel each; simulator time_scale "
        f"{config.time_scale} in its own process; platform: 5 writes / 5 s per channel, 50 ms "
        f"round trip. Lag: overshoot of a {PROBE_EVERY * 1000:.0f} ms sleep. CPU is genbot's "
        f"process only (with jobs in flight it includes the tracker's and delivery's work). "
        f"Process peak RSS (VmHWM): {max_rss_mb:.0f} MB.",
    ]
    return table


def max_rss_mb() -> float:
    """This process's own peak RSS so far in MB: Linux's ``VmHWM``. (``getrusage`` keeps the
    peak across ``exec``, so in this child it would report the parent's size at the fork.)"""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


async def main(quick: bool = False) -> list[Table]:
    """The benchmark as ``python -m bench load [--quick]`` runs it: phases in a child process."""
    config = QUICK if quick else FULL
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.load",
        "--child",
        *(["--quick"] if quick else []),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    output, _ = await child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"the load benchmark's process failed (exit {child.returncode})")
    answer = json.loads(output.decode().strip().splitlines()[-1])
    phases = [Phase(**phase) for phase in answer["phases"]]
    return [load_table(phases, config, answer["max_rss_mb"])]


def child_main(argv: Sequence[str] | None = None) -> None:
    """``python -m bench load --child [--quick]``: run the phases, print them as JSON."""
    parser = argparse.ArgumentParser(prog="python -m bench.load")
    parser.add_argument("--child", action="store_true", required=True)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    phases = asyncio.run(run_load(QUICK if args.quick else FULL))
    print(json.dumps({"phases": [asdict(p) for p in phases], "max_rss_mb": max_rss_mb()}))


if __name__ == "__main__":
    child_main()
