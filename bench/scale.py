"""Benchmark — scale: 1 vs 3 ``genbot run`` processes on one PostgreSQL database, against the
simulator, with ``jobs`` image jobs in flight (3000; ``--quick``: 300).

Each process serves the playground; jobs are submitted through the processes in turn (as a
load balancer would spread commands) into 10 channels, and stay in flight at the simulator
(its clock runs at real speed) until it is moved an hour ahead, when they all finish at once.
Polling runs at a fixed 1 s cycle. Measured per cluster size, in the same run (1 process is the
baseline):

- status requests per cycle, the whole cluster: ``multi_fetch`` calls (and task ids) over a
  10 s window, per second; each process polls only the jobs it holds, so the cluster should
  make about ⌈jobs / 50⌉ whatever its size;
- finished → posted p50 / p95: from the tracker seeing a job finished to its result posted
  (``jobs.finished_at`` → the ``posted`` transition's ``updated_at``);
- burst delivery throughput: jobs posted per second after they all finished at once;
- takeover after ``kill -9`` (3 processes): a tenth of ``jobs`` more, in flight; one process
  killed; seconds until none of its jobs is held by it any more (``[storage] lease_seconds``
  10, the default);
- RSS per process with the jobs in flight.

Uses a throwaway PostgreSQL cluster from the machine's binaries (``tests/postgres.py``).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import charts
from bench.charts import SCALE_PNG, draw
from bench.report import Table, percentile
from simulator.server import serve
from simulator.task_rules import price
from tests.postgres import PostgresCluster, start_cluster
from tests.resilience.cluster import (
    PROMPT,
    SETTLED,
    Cluster,
    kill_one_during_jobs,
    query,
    running_cluster,
)
from tests.resilience.support import sim_config

FULL_JOBS = 3000
QUICK_JOBS = 300
WINDOW_SECONDS = 10.0
CHANNELS = 10
"""Commands go to this many playground channels (each channel has its own write budget)."""
SUBMITTERS = 24
POSTED = "SELECT finished_at, updated_at FROM jobs WHERE status = 'posted'"
FIXED_CYCLE = {"GENBOT_LIMITS__POLL_INTERVAL_MIN": "1.0", "GENBOT_LIMITS__POLL_INTERVAL_MAX": "1.0"}


@dataclass
class ScaleResult:
    processes: int
    jobs: int
    calls_per_cycle: float = 0.0
    ids_per_cycle: float = 0.0
    finished_to_posted: list[float] = field(default_factory=list)
    burst_per_second: float = 0.0
    takeover_seconds: float | None = None
    taken_over: int = 0
    rss_mb: list[float] = field(default_factory=list)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def submit(cluster: Cluster, count: int, first: int = 0) -> None:
    """``count`` imagine commands through the processes in turn, ``SUBMITTERS`` at a time."""
    slots = asyncio.Semaphore(SUBMITTERS)

    async def one(number: int) -> None:
        async with slots:
            browser = cluster.browsers[number % len(cluster.browsers)]
            assert browser.session is not None
            body = {
                "text": "/imagine " + PROMPT.format(number=number),
                "channel": f"bench{number % CHANNELS}",
            }
            async with browser.session.post(f"{browser.url}/api/command", json=body) as answer:
                assert answer.status == 202, await answer.text()

    await asyncio.gather(*(one(n) for n in range(first, first + count)))


def simulator_credits(jobs: int) -> int:
    """Credits for ``jobs`` relax grids and the tenth more of the takeover (the simulator's
    default 10,000 pay for 2,500: the rest would fail at creation)."""
    return price("grid", "relax") * (jobs + takeover_jobs(jobs))


def takeover_jobs(jobs: int) -> int:
    return max(jobs // 10, 10)


def expect_all_posted(found: int, submitted: int, what: str) -> None:
    """Figures of jobs that never ran would be meaningless: fail the benchmark instead."""
    if found != submitted:
        raise RuntimeError(f"{what}: {found} of {submitted} jobs posted")


async def in_flight(cluster: Cluster, count: int) -> None:
    def ready() -> bool:
        found = cluster.jobs()
        return len(found) >= count and all(j["status"] != "creating" for j in found)

    await cluster.until(ready, 900, "every job to reach the provider")


async def measure(
    processes: int, jobs: int, workdir: Path, postgres: PostgresCluster
) -> ScaleResult:
    result = ScaleResult(processes, jobs)
    async with (
        serve(sim_config(time_scale=1.0, credits=simulator_credits(jobs))) as sim,
        running_cluster(
            sim, postgres, workdir, processes=processes, lease_seconds=10.0, extra_env=FIXED_CYCLE
        ) as cluster,
    ):
        await submit(cluster, jobs)
        await in_flight(cluster, jobs)
        polls = sim.state.requests_to("/gen/v2/multi_fetch")
        before, ids_before = len(polls), sum(len(r.body.get("task_ids", [])) for r in polls)
        await asyncio.sleep(WINDOW_SECONDS)
        polls = sim.state.requests_to("/gen/v2/multi_fetch")
        ids = sum(len(r.body.get("task_ids", [])) for r in polls) - ids_before
        result.calls_per_cycle = (len(polls) - before) / WINDOW_SECONDS
        result.ids_per_cycle = ids / WINDOW_SECONDS
        result.rss_mb = [rss_mb(p.process.pid) for p in cluster.processes if p.process]

        sim.advance(3600)
        started = time.time()
        await cluster.until(
            lambda: all(j["status"] in SETTLED for j in cluster.jobs()), 900, "the burst"
        )
        rows = query(
            cluster.url, "SELECT finished_at, updated_at FROM jobs WHERE status = 'posted'"
        )
        expect_all_posted(len(rows), jobs, "the burst")
        done = [row["updated_at"] for row in rows]
        result.burst_per_second = len(done) / max(max(done) - started, 1e-6)
        result.finished_to_posted = [r["updated_at"] - r["finished_at"] for r in rows]

        if processes > 1:
            report = await kill_one_during_jobs(cluster, takeover_jobs(jobs), settle_timeout=600)
            posted = sum(job["status"] == "posted" for job in report.jobs)
            expect_all_posted(posted, jobs + takeover_jobs(jobs), "the takeover")
            if not report.held_by_victim:
                raise RuntimeError("the killed process held no job in flight: no takeover")
            result.takeover_seconds = report.takeover_seconds
            result.taken_over = report.held_by_victim
    return result


def scale_table(results: list[ScaleResult]) -> Table:
    table = Table(
        f"Scale: {results[0].jobs:,} image jobs in flight, 1 vs 3 processes on PostgreSQL",
        [
            "processes",
            "multi_fetch calls / cycle",
            "task ids / cycle",
            "finished→posted p50 s",
            "p95 s",
            "burst posts / s",
            "takeover after kill -9 s",
            "RSS per process MB",
        ],
        digits=2,
    )
    for r in results:
        table.add(
            r.processes,
            r.calls_per_cycle,
            r.ids_per_cycle,
            percentile(r.finished_to_posted, 0.5),
            percentile(r.finished_to_posted, 0.95),
            r.burst_per_second,
            None if r.takeover_seconds is None else r.takeover_seconds,
            " / ".join(f"{mb:.0f}" for mb in r.rss_mb),
        )
    jobs = results[0].jobs
    table.notes = [
        f"Cycle: 1 s (poll_interval_min = max = 1); ⌈{jobs} / 50⌉ = {-(-jobs // 50)} calls per "
        "cycle would poll every job once. Takeover: [storage] lease_seconds = 10, "
        f"{results[-1].taken_over} jobs held by the killed process.",
        "Baseline: 1 process in the same run. finished→posted starts when the tracker saw the "
        "job finished (its next poll after the simulator finished it).",
    ]
    return table


async def main(quick: bool) -> list[Table]:
    jobs = QUICK_JOBS if quick else FULL_JOBS
    postgres = await asyncio.to_thread(start_cluster)
    try:
        results = []
        for processes in (1, 3):
            with tempfile.TemporaryDirectory(prefix="genbot-scale-") as directory:
                results.append(await measure(processes, jobs, Path(directory), postgres))
    finally:
        await asyncio.to_thread(postgres.stop)
    table = scale_table(results)
    if not quick:
        table.notes.append(draw(lambda: charts.scale_out(results, SCALE_PNG)))
    return [table]
