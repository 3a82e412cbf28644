"""Benchmark — scale: 1 vs 3 ``genbot run`` processes on one PostgreSQL database, against the
simulator, with ``jobs`` image jobs in flight (3000; ``--quick``: 300).

Each process serves the playground; jobs are submitted through the processes in turn (as a
load balancer would spread commands) into 10 channels, and stay in flight at the simulator
(its clock stands still from the first command) until it is moved an hour ahead, when they all
finish at once. The simulator serves flat pictures (``plain_images``), as a CDN serves stored
files: drawing 3000 grids would take the cores genbot is measured on.
Polling runs at a fixed 1 s cycle. The sizes run in turn, 1, 3, 3, 1 (:data:`ALTERNATED`; one
of each with ``quick``, ``profile`` or ``attribute``), and the tables are of the first two runs,
beside a table of every run's CPU per job and 3 processes ÷ 1 over them. Measured per cluster
size, in the same run (1 process is the baseline):

- status requests per cycle, the whole cluster: ``multi_fetch`` calls (and task ids) over a
  10 s window, per second; each process polls only the jobs it holds, so the cluster should
  make about ⌈jobs / 50⌉ whatever its size;
- finished → posted p50 / p95: from the tracker seeing a job finished to its result posted
  (``jobs.finished_at`` → the ``posted`` transition's ``updated_at``);
- burst delivery throughput: jobs posted per second after they all finished at once (from the
  jump; and the first result's time after it, and the rate from the first result on);
- takeover after ``kill -9`` (3 processes): a tenth of ``jobs`` more, in flight; one process
  killed; seconds until none of its jobs is held by it any more (``[storage] lease_seconds``
  10, the default);
- RSS per process with the jobs in flight;
- CPU seconds per job of each phase (submit: from the first command to every job at the
  provider; in flight: the 10 s window; burst: from the jump to every job posted), per
  process, for the whole cluster, and for PostgreSQL (its server and every backend, from
  ``/proc``); the benchmark's own process (the simulator and the driver) beside them;
- PostgreSQL transactions per job of each phase (``pg_stat_database``: counted, not timed;
  the benchmark's own progress counts included);
- with ``profile``, py-spy's samples of every genbot process in each phase
  (:mod:`bench.profiler`), a file per process and phase;
- with ``attribute``, every genbot process's event-loop callbacks timed and named
  (:mod:`bench.attribution`), and per phase what the same work costs in 3 processes against 1
  beside what the cluster costs (:func:`same_work_table`).

Uses a throwaway PostgreSQL cluster from the machine's binaries (``tests/postgres.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import operator
import os
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import psycopg

from adapters.web.platform import WEB_PROFILE
from bench import attribution, charts, profiler
from bench.charts import SCALE_PNG, draw
from bench.cpu import cpu_seconds, postmaster_pid, server_cpu_seconds
from bench.report import Table, percentile
from bot.features.jobs.held_images import RESULTS_AT_MOST_HELD
from simulator.server import serve
from simulator.task_rules import price
from storage.sql.session import from_json
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
from tests.sim_time import freeze, resume

FULL_JOBS = 3000
QUICK_JOBS = 300
WINDOW_SECONDS = 10.0
CHANNELS = 10
"""Commands go to this many playground channels (each channel has its own write window)."""
SUBMITTERS = 24
BACKLOG = 300
POLL_SECONDS = 0.1
IMAGE_SAMPLE = 500
SUBMIT_TIMEOUT = aiohttp.ClientTimeout(total=300)
"""How long one command may take to be accepted: a process that starts thousands of jobs at once
answers slowly on a busy machine (the command is taken all the same; a retry would submit it
twice)."""
POSTED = "SELECT finished_at, updated_at FROM jobs WHERE status = 'posted'"
TRANSACTIONS = (
    "SELECT xact_commit + xact_rollback AS n FROM pg_stat_database"
    " WHERE datname = current_database()"
)
FIXED_CYCLE = {"GENBOT_LIMITS__POLL_INTERVAL_MIN": "1.0", "GENBOT_LIMITS__POLL_INTERVAL_MAX": "1.0"}
MESSAGES_PER_JOB = 2
"""A job's messages in its channel: the command and its progress message (which becomes its
result)."""


PHASES = ("submit", "in flight", "burst")
SIZE = operator.attrgetter("processes")
ALTERNATED = (1, 3, 3, 1)
"""The cluster sizes of a full run, in turn: the ratio of 3 processes' CPU per job to 1's moves
by a tenth or more between runs of one tree on this machine, so each size runs twice and a
drift of the machine during the run falls on neither."""


@dataclass(frozen=True)
class CpuSnapshot:
    """CPU seconds used so far by each genbot process, PostgreSQL and this process, and the
    transactions PostgreSQL has counted in the database."""

    at: float
    genbot: tuple[float, ...]
    postgres: float
    bench: float
    transactions: int = 0


@dataclass(frozen=True)
class PhaseCpu:
    """CPU seconds one phase took: per genbot process, PostgreSQL's, this process's."""

    wall: float
    genbot: tuple[float, ...]
    postgres: float
    bench: float
    transactions: int = 0

    @staticmethod
    def between(start: CpuSnapshot, end: CpuSnapshot) -> PhaseCpu:
        used = tuple(b - a for a, b in zip(start.genbot, end.genbot, strict=True))
        return PhaseCpu(
            end.at - start.at,
            used,
            end.postgres - start.postgres,
            end.bench - start.bench,
            end.transactions - start.transactions,
        )


@dataclass(frozen=True)
class BurstFigures:
    """How the burst went, from the jump that finished every job: ``per_second``, results
    posted a second until the last; ``first``, seconds until the first (mostly the poll that
    sees them finished: at most a cycle, plus reading and applying its answers);
    ``then_per_second``, results a second from the first to the last (delivery alone)."""

    per_second: float
    first: float
    then_per_second: float

    @classmethod
    def of(cls, jump: float, posted: list[float]) -> BurstFigures:
        """The burst of results ``posted`` at these times after the ``jump``."""
        first, last = min(posted), max(posted)
        then = (len(posted) - 1) / (last - first) if last > first else math.nan
        return cls(len(posted) / max(last - jump, 1e-6), first - jump, then)


@dataclass
class ScaleResult:
    processes: int
    jobs: int
    calls_per_cycle: float = 0.0
    ids_per_cycle: float = 0.0
    finished_to_posted: list[float] = field(default_factory=list)
    burst: BurstFigures = field(default_factory=lambda: BurstFigures(0.0, 0.0, 0.0))
    takeover_seconds: float | None = None
    taken_over: int = 0
    rss_mb: list[float] = field(default_factory=list)
    cpu: dict[str, PhaseCpu] = field(default_factory=dict)
    ids_polled: int = 0
    """Task ids the cluster polled in the in-flight window."""
    images_per_second: float = 0.0
    """The simulator's image-serving rate, measured after the burst (see
    :func:`image_serving_rate`)."""
    posted_anew: int = 0
    """Results posted as a new message (their progress message was gone): two writes each."""
    attributed: dict[str, dict[str, tuple[int, float]]] = field(default_factory=dict)
    """Per phase, the cluster's event-loop CPU by callback (with ``attribute``)."""

    @property
    def burst_per_second(self) -> float:
        """Results posted a second in the burst, from the jump until the last."""
        return self.burst.per_second

    def polled_id_ms(self) -> float:
        """Milliseconds of genbot CPU per polled task id in the in-flight window."""
        window = self.cpu.get("in flight")
        if window is None or not self.ids_polled:
            return math.nan
        return 1000 * sum(window.genbot) / self.ids_polled


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class JobCounts:
    """Counts of the cluster's jobs, on one connection kept open while the benchmark waits: a
    connection per count started a PostgreSQL backend each time, whose CPU is the run's."""

    def __init__(self, url: str) -> None:
        self._conn = psycopg.connect(url, autocommit=True)

    def close(self) -> None:
        self._conn.close()

    def jobs(self, where: str) -> int:
        """Jobs matching ``where`` (a count: reading every row at each poll would load
        PostgreSQL, whose CPU is measured)."""
        row = self._conn.execute(f"SELECT COUNT(*) FROM jobs WHERE {where}").fetchone()
        assert row is not None
        return int(row[0])


async def submit(cluster: Cluster, counts: JobCounts, count: int, first: int = 0) -> None:
    """``count`` imagine commands through the processes in turn, ``SUBMITTERS`` at a time, and
    at most ``BACKLOG`` accepted that have not reached the provider yet (a process takes a
    command at once and starts its job in the background: thousands started at once would
    wait for storage connections past their bound)."""
    slots = asyncio.Semaphore(SUBMITTERS)
    sent = 0
    reached = 0

    async def room() -> None:
        nonlocal reached
        while sent - reached >= BACKLOG:
            await asyncio.sleep(POLL_SECONDS)
            reached = counts.jobs("status <> 'creating'") - first

    async def one(number: int) -> None:
        nonlocal sent
        async with slots:
            await room()
            sent += 1
            browser = cluster.browsers[number % len(cluster.browsers)]
            assert browser.session is not None
            body = {
                "text": "/imagine " + PROMPT.format(number=number),
                "channel": f"bench{number % CHANNELS}",
            }
            url = f"{browser.url}/api/command"
            async with browser.session.post(url, json=body, timeout=SUBMIT_TIMEOUT) as answer:
                assert answer.status == 202, await answer.text()

    await asyncio.gather(*(one(n) for n in range(first, first + count)))


def simulator_credits(jobs: int) -> int:
    """Credits for ``jobs`` relax grids and the tenth more of the takeover (the simulator's
    default 10,000 pay for 2,500: the rest would fail at creation)."""
    return price("grid", "relax") * (jobs + takeover_jobs(jobs))


def takeover_jobs(jobs: int) -> int:
    return max(jobs // 10, 10)


def genbot_env(jobs: int) -> dict[str, str]:
    """The genbots' settings: a fixed 1 s cycle, and channels that keep every message of the
    run, as Discord's and Slack's do. With the playground's default 500 a channel drops its
    oldest messages: at 3000 jobs 720 progress messages had left before the burst, and their
    results were posted anew — two writes each (the edit that finds the message gone, the post)
    where the scenario's bound counts one."""
    per_channel = -(-(jobs + takeover_jobs(jobs)) // CHANNELS) * MESSAGES_PER_JOB
    return FIXED_CYCLE | {"GENBOT_WEB__MESSAGES_PER_CHANNEL": str(max(per_channel * 2, 500))}


def expect_all_posted(cluster: Cluster, found: int, submitted: int, what: str) -> None:
    """Figures of jobs that never ran would be meaningless: fail the benchmark instead, saying
    where the others ended and why."""
    if found != submitted:
        ended = query(
            cluster.url,
            "SELECT status, error, COUNT(*) AS n FROM jobs WHERE status <> 'posted'"
            " GROUP BY status, error ORDER BY n DESC LIMIT 5",
        )
        where = "; ".join(f"{row['n']} {row['status']} ({row['error']})" for row in ended)
        raise RuntimeError(f"{what}: {found} of {submitted} jobs posted; {where}")


POSTED_ANEW = "status = 'posted' AND result_message_id IS DISTINCT FROM progress_message_id"
UNSETTLED = "status NOT IN ({})".format(", ".join(f"'{s}'" for s in sorted(SETTLED)))


async def in_flight(cluster: Cluster, counts: JobCounts, count: int) -> None:
    def ready() -> bool:
        return counts.jobs("status <> 'creating'") >= count

    await cluster.until(ready, 900, "every job to reach the provider")


async def until_settled(
    unsettled: Callable[[], int],
    per_second: float,
    timeout: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Wait until ``unsettled()`` counts no job, counting as seldom as the end allows: at most
    ``per_second`` jobs settle a second (each is a write in the platform's windows, which also
    let a second's writes go at once), so after a count of ``n`` the end is at least
    ``n / per_second - 1`` s away. The next count comes after half that, and at least
    ``POLL_SECONDS`` after this one: the end is seen by a count, within ``POLL_SECONDS``.
    :class:`TimeoutError` after ``timeout`` seconds."""
    deadline = clock() + timeout
    while (left := unsettled()) > 0:
        if clock() > deadline:
            raise TimeoutError(f"gave up waiting for the burst: {left} jobs unsettled")
        await sleep(max(POLL_SECONDS, (left / per_second - 1) / 2))


def write_window_bound() -> float:
    """Result posts per second the platform's write windows allow in the scenario's channels
    (one write each: the progress message becomes the result)."""
    per_second = WEB_PROFILE.edits_per_window_per_channel / WEB_PROFILE.edit_window_seconds
    return CHANNELS * per_second


async def image_serving_rate(cluster: Cluster) -> float:
    """Result images per second the simulator serves, ``RESULTS_AT_MOST_HELD`` downloads at a
    time, as many as genbot's deliveries make at once (each holds room for an image at the
    upload limit while it downloads) (downloaded by this process, which also runs the
    simulator: a lower bound)."""
    rows = query(cluster.url, f"SELECT result_urls FROM jobs LIMIT {IMAGE_SAMPLE}")
    urls = [urls[0] for urls in (from_json(r["result_urls"], []) for r in rows) if urls]
    slots = asyncio.Semaphore(RESULTS_AT_MOST_HELD)

    async def one(session: aiohttp.ClientSession, url: str) -> None:
        async with slots, session.get(url) as answer:
            await answer.read()
            assert answer.status == 200, url

    started = time.perf_counter()
    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(one(session, url) for url in urls))
    return len(urls) / (time.perf_counter() - started)


def genbot_pids(cluster: Cluster) -> list[int]:
    return [p.process.pid for p in cluster.processes if p.process is not None]


class PhaseMeter:
    """Measures the phases of one cluster's run: CPU seconds, and py-spy profiles of every
    genbot process when ``profile`` names a folder."""

    def __init__(self, cluster: Cluster, postgres: PostgresCluster, profile: Path | None) -> None:
        self._pids = genbot_pids(cluster)
        self._url = cluster.url
        self._postgres = postmaster_pid(postgres.folder / "data")
        self._profile = profile
        self.phases: dict[str, PhaseCpu] = {}
        self.moments: dict[str, tuple[float, float]] = {}
        """Each phase's start and end (monotonic)."""

    def snapshot(self) -> CpuSnapshot:
        return CpuSnapshot(
            time.monotonic(),
            tuple(cpu_seconds(pid) for pid in self._pids),
            server_cpu_seconds(self._postgres),
            time.process_time(),
            int(query(self._url, TRANSACTIONS)[0]["n"]),
        )

    @contextlib.asynccontextmanager
    async def phase(self, name: str) -> AsyncIterator[None]:
        recordings = []
        if self._profile is not None:
            self._profile.mkdir(parents=True, exist_ok=True)
            slug = name.replace(" ", "-")
            named = {f"node{node}": pid for node, pid in enumerate(self._pids)}
            for who, pid in (named | {"bench": os.getpid()}).items():
                path = self._profile / f"{len(self._pids)}p-{who}-{slug}.txt"
                recordings.append(await profiler.record(pid, path))
        start = self.snapshot()
        try:
            yield
        finally:
            end = self.snapshot()
            self.phases[name] = PhaseCpu.between(start, end)
            self.moments[name] = (start.at, end.at)
            for recording in recordings:
                await recording.stop()


async def measure(
    processes: int,
    jobs: int,
    workdir: Path,
    postgres: PostgresCluster,
    profile: Path | None = None,
    attribute: Path | None = None,
) -> ScaleResult:
    result = ScaleResult(processes, jobs)
    config = sim_config(time_scale=1.0, credits=simulator_credits(jobs), plain_images=True)
    env = genbot_env(jobs)
    recorded = None if attribute is None else attribute / f"{processes}p"
    if recorded is not None:
        recorded.mkdir(parents=True, exist_ok=True)
        for old in recorded.glob("attribution-*.jsonl"):
            old.unlink()
        env |= attribution.environment(recorded)
    async with (
        serve(config) as sim,
        running_cluster(
            sim,
            postgres,
            workdir,
            processes=processes,
            lease_seconds=10.0,
            extra_env=env,
        ) as cluster,
    ):
        with contextlib.closing(JobCounts(cluster.url)) as counts:
            meter = PhaseMeter(cluster, postgres, profile)
            freeze(sim)
            async with meter.phase("submit"):
                await submit(cluster, counts, jobs)
                await in_flight(cluster, counts, jobs)
            polls = sim.state.requests_to("/gen/v2/multi_fetch")
            before, ids_before = len(polls), sum(len(r.body.get("task_ids", [])) for r in polls)
            async with meter.phase("in flight"):
                await asyncio.sleep(WINDOW_SECONDS)
            polls = sim.state.requests_to("/gen/v2/multi_fetch")
            ids = sum(len(r.body.get("task_ids", [])) for r in polls) - ids_before
            result.calls_per_cycle = (len(polls) - before) / WINDOW_SECONDS
            result.ids_per_cycle = ids / WINDOW_SECONDS
            result.ids_polled = ids
            result.rss_mb = [rss_mb(pid) for pid in genbot_pids(cluster)]

            async with meter.phase("burst"):
                sim.advance(3600)
                started = time.time()
                await until_settled(lambda: counts.jobs(UNSETTLED), write_window_bound(), 900)
            result.cpu = meter.phases
            resume(sim)
            result.images_per_second = await image_serving_rate(cluster)
            rows = query(
                cluster.url, "SELECT finished_at, updated_at FROM jobs WHERE status = 'posted'"
            )
            expect_all_posted(cluster, len(rows), jobs, "the burst")
            result.burst = BurstFigures.of(started, [row["updated_at"] for row in rows])
            result.finished_to_posted = [r["updated_at"] - r["finished_at"] for r in rows]
            result.posted_anew = counts.jobs(POSTED_ANEW)

        if processes > 1:
            report = await kill_one_during_jobs(cluster, takeover_jobs(jobs), settle_timeout=600)
            posted = sum(job["status"] == "posted" for job in report.jobs)
            expect_all_posted(cluster, posted, jobs + takeover_jobs(jobs), "the takeover")
            if not report.held_by_victim:
                raise RuntimeError("the killed process held no job in flight: no takeover")
            result.takeover_seconds = report.takeover_seconds
            result.taken_over = report.held_by_victim
    if recorded is not None:
        (recorded / "phases.json").write_text(json.dumps(meter.moments))
        result.attributed = {
            name: attribution.phase(recorded, *moments) for name, moments in meter.moments.items()
        }
    return result


def scale_table(results: list[ScaleResult]) -> Table:
    table = Table(
        f"Scale: {results[0].jobs:,} image jobs in flight, 1 vs 3 processes on PostgreSQL",
        [
            "processes",
            "multi_fetch calls / cycle",
            "task ids / cycle",
            "genbot CPU ms / polled id",
            "finished→posted p50 s",
            "p95 s",
            "burst posts / s",
            "first result after the jump s",
            "posts / s from the first",
            "bound: write windows / s",
            "bound: images served / s",
            "results posted anew",
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
            r.polled_id_ms(),
            percentile(r.finished_to_posted, 0.5),
            percentile(r.finished_to_posted, 0.95),
            r.burst.per_second,
            r.burst.first,
            r.burst.then_per_second,
            write_window_bound(),
            r.images_per_second,
            r.posted_anew,
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
        "Burst: results a second from the jump that finished every job to the last posted; the "
        "first result's time after the jump (the poll that sees them finished, at most a cycle "
        "later, and its answers applied); and results a second from the first to the last "
        "(delivery alone).",
        f"Bounds of burst delivery: the playground's write windows, "
        f"{WEB_PROFILE.edits_per_window_per_channel} writes per "
        f"{WEB_PROFILE.edit_window_seconds:g} s in each of the {CHANNELS} channels (a result is "
        "one write, its progress message edited — two where it was posted anew; progress edits "
        "share them; channels keep every message of the run; the playground does not enforce "
        "them, so genbot counts each write from its grant), and the simulator's image-serving "
        "rate "
        f"({RESULTS_AT_MOST_HELD} downloads at a time from the benchmark's process, which also "
        "runs the simulator, after the burst; flat pictures, as a CDN serves stored files).",
    ]
    return table


def cpu_table(results: list[ScaleResult]) -> Table:
    """CPU seconds per job of each phase: each genbot process, the cluster, PostgreSQL."""
    table = Table(
        f"Scale: CPU seconds per job by phase, {results[0].jobs:,} jobs, 1 vs 3 processes",
        [
            "processes",
            "phase",
            "wall s",
            "per process ms / job",
            "cluster ms / job",
            "PostgreSQL ms / job",
            "cluster + PostgreSQL ms / job",
            "× 1 process",
            "benchmark process ms / job",
            "PostgreSQL transactions / job",
        ],
        digits=2,
    )
    single = {name: phase for name, phase in results[0].cpu.items()}
    for r in results:
        for name in PHASES:
            phase = r.cpu.get(name)
            if phase is None:
                continue
            per_job = 1000 / r.jobs
            cluster = sum(phase.genbot) * per_job
            base = single.get(name)
            ratio = cluster / (sum(base.genbot) * per_job) if base and sum(base.genbot) else None
            table.add(
                r.processes,
                name,
                phase.wall,
                " / ".join(f"{s * per_job:.2f}" for s in phase.genbot),
                cluster,
                phase.postgres * per_job,
                cluster + phase.postgres * per_job,
                ratio,
                phase.bench * per_job,
                phase.transactions / r.jobs,
            )
    table.notes = [
        "CPU from /proc (user + system): each genbot process; PostgreSQL = its server, its "
        "backends and those it reaped. The benchmark process runs the simulator (all provider "
        "calls and image downloads) and the driver. In flight is a 10 s window with every job "
        "at the provider (its CPU per job is per 10 s of tracking). × 1 process: the cluster's "
        "genbot CPU per job against one process's, same phase. Transactions: PostgreSQL's count "
        "for the database (pg_stat_database, flushed by each backend at most once a second), "
        "the benchmark's own progress counts included.",
    ]
    return table


def genbot_ms_per_job(result: ScaleResult) -> float:
    """The cluster's genbot CPU milliseconds per job over the three phases."""
    return 1000 * sum(sum(result.cpu[name].genbot) for name in PHASES) / result.jobs


def alternation_table(runs: list[ScaleResult]) -> Table:
    """Each run's genbot CPU per job by phase, in the order they ran, and 3 processes ÷ 1: the
    means of each size's runs, and each run of 3 against the run of 1 beside it."""
    table = Table(
        f"Scale: genbot CPU per job, {runs[0].jobs:,} jobs, the sizes in turn",
        ["run", "processes", *(f"{name} ms / job" for name in PHASES), "ms / job", "× 1 process"],
        digits=2,
    )
    ones = [genbot_ms_per_job(r) for r in runs if r.processes == 1]
    mean_one = sum(ones) / len(ones)
    for number, r in enumerate(runs, start=1):
        phases = [1000 * sum(r.cpu[name].genbot) / r.jobs for name in PHASES]
        total = genbot_ms_per_job(r)
        table.add(number, r.processes, *phases, total, total / mean_one)
    threes = [genbot_ms_per_job(r) for r in runs if r.processes > 1]
    pairs = [
        genbot_ms_per_job(max(pair, key=SIZE)) / genbot_ms_per_job(min(pair, key=SIZE))
        for pair in zip(runs[::2], runs[1::2], strict=True)
    ]
    table.notes = [
        "× 1 process: against the mean of this run's 1-process runs. 3 processes ÷ 1, the "
        f"means: {sum(threes) / len(threes) / mean_one:.3f}; each pair (runs "
        + ", ".join(f"{2 * n + 1}–{2 * n + 2}" for n in range(len(pairs)))
        + "): "
        + ", ".join(f"{ratio:.3f}" for ratio in pairs)
        + ". The tables above are of runs 1 and 2.",
    ]
    return table


def same_work_table(results: list[ScaleResult]) -> Table:
    """Per phase, what the machine charges three processes for the same work (a fixed probe;
    the callbacks alike) beside what the cluster's CPU is against one (see
    :mod:`bench.attribution`)."""
    table = Table(
        f"Scale: the same work in 1 and 3 processes, {results[0].jobs:,} jobs",
        [
            "processes",
            "phase",
            "× 1 process: a fixed probe",
            "callbacks alike",
            "their calls",
            "their CPU s in 1 process",
            "× 1 process: per call, weighted",
            "per call: lowest / median / highest",
            "× 1 process: the cluster",
            "the cluster ÷ the probe",
        ],
        digits=2,
    )
    one = results[0]
    largest, grown = [], []
    for r in results[1:]:
        for name in PHASES:
            before, after = one.attributed[name], r.attributed[name]
            alike = attribution.same_work(before, after)
            probe = attribution.probe_ratio(before, after)
            cluster = sum(r.cpu[name].genbot) / sum(one.cpu[name].genbot)
            ratios = sorted(alike.ratios) or [math.nan]
            table.add(
                r.processes,
                name,
                probe,
                len(alike.names),
                f"{alike.calls[0]} / {alike.calls[1]}",
                alike.one,
                alike.ratio,
                f"{ratios[0]:.2f} / {ratios[len(ratios) // 2]:.2f} / {ratios[-1]:.2f}",
                cluster,
                cluster / probe,
            )
            largest.append(
                f"{name}: "
                + ", ".join(
                    f"{n} ×{ratio:.2f}"
                    for n, ratio in zip(alike.names[:3], alike.ratios[:3], strict=False)
                )
            )
            grown.append(f"{name}: " + ", ".join(attribution.grown(before, after)[:4]))
    table.notes = [
        "Every genbot process's event-loop callbacks timed by their thread's CPU and named by "
        "what they run (a task's step by its coroutine, T:; another callback by its function, "
        "C:), and a fixed piece of pure Python (dicts, strings, JSON; about 0.7 ms) timed every "
        "0.1 s in a thread of each: its CPU per run in 3 processes against 1 is what the "
        "machine charges the same work for three processes and PostgreSQL on its cores. Alike: "
        f"at least {attribution.MIN_CALLS} calls in each run, their counts within "
        f"{attribution.SAME_WITHIN:.0%} of each other; their CPU per call in 3 processes "
        "against 1, weighted by 1 process's CPU — an upper bound of the machine's charge on "
        "genbot's own code (such a step may still do more in three, and each process warms "
        "its own caches). The cluster's ratio (genbot CPU, as in the CPU table, but of these "
        "runs: timing every callback costs each process a few microseconds a callback, and "
        "three make more callbacks a job) includes the machine's charge and what being three "
        "adds. Phases are cut between the totals written every 0.25 s, each name's share of "
        "the way.",
        "The largest alike callbacks, CPU per call in 3 processes against 1: "
        + "; ".join(largest)
        + ".",
        "What grew most, 3 processes' CPU seconds against 1 (their calls): "
        + "; ".join(grown)
        + ". Each process's totals and the phases' moments are kept in the folder given.",
    ]
    return table


async def main(
    quick: bool, profile: Path | None = None, attribute: Path | None = None
) -> list[Table]:
    """The table (and chart); with ``profile``, py-spy's samples of each phase in that
    folder; with ``attribute``, each process's callbacks' totals in that folder, and the same
    work's table."""
    jobs = QUICK_JOBS if quick else FULL_JOBS
    sizes = (1, 3) if quick or profile or attribute else ALTERNATED
    postgres = await asyncio.to_thread(start_cluster)
    try:
        runs = []
        for processes in sizes:
            with tempfile.TemporaryDirectory(prefix="genbot-scale-") as directory:
                runs.append(
                    await measure(processes, jobs, Path(directory), postgres, profile, attribute)
                )
    finally:
        await asyncio.to_thread(postgres.stop)
    results = runs[:2]
    table = scale_table(results)
    if not quick:
        table.notes.append(draw(lambda: charts.scale_out(results, SCALE_PNG)))
    tables = [table, cpu_table(results)]
    if len(runs) > len(results):
        tables.append(alternation_table(runs))
    if attribute is not None:
        tables.append(same_work_table(results))
    return tables
