"""Benchmark 2 — tracking: a thousand concurrent image jobs against the simulator.

Each variant gets a fresh simulator in a child process (:mod:`bench.simproc`) and a fresh genbot
(:mod:`bench.app`) on a fresh database. ``jobs`` users each send ``/imagine … --fast`` at once
(spread over ``channels`` channels of a platform whose limits never bind); the run ends when
every job is posted. The simulator serves flat pictures (``plain_images``): drawing a thousand
result images here would take the CPU genbot is measured on (about 13 s of queue at full size),
where a provider's CDN hands out stored files from its own machines. Variants:

- ``genbot``: the tracker, batching in-flight jobs into ``multi_fetch`` calls of ≤ 50 ids per
  round (interval from ``interval`` up to 10× it when quiet);
- ``per-task fetch``: the tracker's loop off; instead every job gets its own poller that calls
  ``fetch`` for that one task every ``interval`` seconds and hands the record to genbot
  (:meth:`bot.features.jobs.Tracker.apply_task_record`), so posting is identical and only polling
  differs;
- ``genbot + webhooks``: the tracker with ``[webhook]`` on (loopback, ``allow_insecure_loopback``)
  and a simulator sending webhooks; polling is only the backstop.

Finished → posted is the provider's finish time (from the simulator) to the moment the result
message with its image reached the platform.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench import charts
from bench.app import ROOMY, BenchBot, running_bot
from bench.charts import POSTED_PNG, REQUESTS_PNG, draw
from bench.platform import BenchPlatform
from bench.report import Table, percentile
from bench.simproc import simulator_process
from bot.api import ApiError
from bot.kernel import Command, Place, User
from storage import ACTIVE_STATUSES, ALL_STATUSES

GENBOT = "genbot (batched)"
PER_TASK = "per-task fetch"
WEBHOOKS = "genbot + webhooks"
STATUS_PATHS = ("/gen/v2/fetch", "/gen/v2/multi_fetch")
CREATE_PATH = "/gen/v2/imagine"
SETTLED_SQL = (
    "SELECT COUNT(*) FROM jobs WHERE status IN ('posted', 'failed_posted', 'create_failed')"
)


@dataclass(frozen=True)
class TrackingConfig:
    """What to run; ``time_scale`` is the simulator's (a fast grid takes ~20 s × it)."""

    jobs: int = 1000
    time_scale: float = 0.5
    interval: float = 1.0
    channels: int = 50
    deadline: float = 300.0
    variants: tuple[str, ...] = (GENBOT, PER_TASK, WEBHOOKS)
    directory: str | None = None


FULL = TrackingConfig()
QUICK = TrackingConfig(jobs=200, time_scale=0.25, interval=0.5)


@dataclass
class TrackingRow:
    """One variant's figures."""

    variant: str
    jobs: int
    posted: int = 0
    status_requests: int = 0
    creates: int = 0
    other_requests: int = 0
    cycles: float = 0.0
    webhooks_delivered: int = 0
    latency: list[float] = field(default_factory=list)
    detection: list[float] = field(default_factory=list)
    duration: float = 0.0
    finished: bool = True
    ephemerals: int = 0


def imagine(index: int, channels: int, mode: str = "fast") -> Command:
    """The ``index``-th user's ``/imagine`` command (in channel ``index % channels``)."""
    return Command(
        user=User(f"u{index}", f"User {index}"),
        place=Place("bench", "g1", f"c{index % channels}"),
        name="imagine",
        options={"prompt": f"a lighthouse at dusk, study {index} --v 6", "process_mode": mode},
    )


async def settled_count(bot: BenchBot) -> int:
    """How many jobs are posted, reported or refused."""
    row = await bot.store.db.run(lambda db: db.conn.execute(SETTLED_SQL).fetchone())
    return int(row[0])


async def wait_settled(bot: BenchBot, jobs: int) -> None:
    """Return once ``jobs`` jobs are posted, reported or refused (checked every 0.1 s)."""
    while True:
        if await settled_count(bot) >= jobs:
            return
        await asyncio.sleep(0.1)


class PerTaskPolling:
    """The baseline: one poller per job, one ``fetch`` per job per interval."""

    def __init__(self, bot: BenchBot, interval: float) -> None:
        self.bot = bot
        self.interval = interval
        self.tasks: list[asyncio.Task[None]] = []
        self.first: float | None = None
        self.last: float | None = None

    async def follow(self, event: Command) -> None:
        """Find the job ``event`` started (through its progress message) and poll it."""
        (message_id, *_) = self.bot.platform.by_stream[event.user.id]
        job = await self.bot.store.message_links.job_for_message(
            event.place.platform, event.place.channel_id, message_id
        )
        if job is None or job.provider_id is None:
            return
        self.tasks.append(asyncio.create_task(self._poll(job.id, job.provider_id)))

    async def _poll(self, job_id: str, provider_id: str) -> None:
        self.first = self.first or time.monotonic()
        tracker = self.bot.jobs.tracker
        while True:
            await asyncio.sleep(self.interval)
            try:
                record = await self.bot.provider.tasks.fetch(provider_id)
            except ApiError:
                continue
            job = await self.bot.store.jobs.get_job(job_id)
            if job is None or job.status not in ACTIVE_STATUSES:
                break
            await tracker.apply_task_record(job, record)
            if record.status in ("finished", "failed"):
                break
        self.last = time.monotonic()

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def cycles(self) -> float:
        if self.first is None or self.last is None:
            return 0.0
        return (self.last - self.first) / self.interval


async def run_variant(variant: str, config: TrackingConfig, directory: Path) -> TrackingRow:
    """One variant on its own simulator and database."""
    webhooks = variant == WEBHOOKS
    row = TrackingRow(variant, config.jobs)
    async with (
        simulator_process(
            time_scale=config.time_scale, insecure_webhooks=webhooks, plain_images=True
        ) as sim,
        running_bot(
            sim.base_url,
            directory / f"{variant.split()[0]}-{len(variant)}.db",
            platform=BenchPlatform(ROOMY, latency=0.0),
            poll_interval=config.interval,
            webhooks=webhooks,
            tracker=variant != PER_TASK,
        ) as bot,
    ):
        baseline = PerTaskPolling(bot, config.interval) if variant == PER_TASK else None
        started = time.monotonic()

        async def submit(index: int) -> None:
            event = imagine(index, config.channels)
            await bot.core.handle(event)
            if baseline is not None:
                await baseline.follow(event)

        try:
            async with asyncio.timeout(config.deadline):
                await asyncio.gather(*(submit(index) for index in range(config.jobs)))
                await wait_settled(bot, config.jobs)
                await bot.jobs.tracker.wait_idle()
        except TimeoutError:
            row.finished = False
        row.duration = time.monotonic() - started
        if baseline is not None:
            await baseline.stop()
        row.cycles = baseline.cycles() if baseline is not None else bot.jobs.tracker.rounds
        stats, tasks = await sim.stats(), await sim.tasks()
        jobs = await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES)
        row.ephemerals = len(bot.platform.ephemerals)
        for job in jobs:
            if job.status != "posted":
                continue
            row.posted += 1
            shown = bot.platform.images_at.get(job.result_message_id or "")
            task = tasks.get(job.provider_id or "")
            if task is None:
                continue
            if job.finished_at is not None:
                row.detection.append(job.finished_at - float(task["ends_at"]))
            if shown is not None:
                row.latency.append(shown - float(task["ends_at"]))
    requests: dict[str, int] = stats["requests"]
    row.status_requests = sum(requests.get(path, 0) for path in STATUS_PATHS)
    row.creates = requests.get(CREATE_PATH, 0)
    row.other_requests = sum(requests.values()) - row.status_requests - row.creates
    row.webhooks_delivered = int(stats["webhooks"]["delivered"])
    return row


async def run_tracking(config: TrackingConfig = FULL) -> list[TrackingRow]:
    """Every variant in turn, each on its own simulator process and database."""
    with tempfile.TemporaryDirectory(prefix="genbot-bench-", dir=config.directory) as directory:
        return [await run_variant(name, config, Path(directory)) for name in config.variants]


def tracking_table(rows: Sequence[TrackingRow], config: TrackingConfig) -> Table:
    """The variants side by side."""
    table = Table(
        f"Tracking: {config.jobs} concurrent /imagine jobs against the simulator",
        [
            "variant",
            "posted",
            "status requests",
            "per job",
            "poll cycles",
            "per cycle",
            "creates",
            "other requests",
            "webhooks",
            "finished→known s p50",
            "p95",
            "finished→posted s p50",
            "p95",
            "max",
            "run s",
        ],
    )
    for row in rows:
        table.add(
            row.variant,
            f"{row.posted}/{row.jobs}",
            row.status_requests,
            row.status_requests / row.jobs if row.jobs else None,
            round(row.cycles),
            row.status_requests / row.cycles if row.cycles else None,
            row.creates,
            row.other_requests,
            row.webhooks_delivered,
            percentile(row.detection, 0.5),
            percentile(row.detection, 0.95),
            percentile(row.latency, 0.5),
            percentile(row.latency, 0.95),
            max(row.latency, default=None),
            row.duration if row.finished else f">{config.deadline:.0f} (cut)",
        )
    table.notes = [
        f"Simulator time_scale {config.time_scale} (a fast grid takes about "
        f"{20 * config.time_scale:.0f} s), in its own process, serving flat pictures as a CDN "
        f"serves stored files; poll interval {config.interval} s "
        f"(genbot's tracker: {config.interval}–{config.interval * 10} s, adaptive; the baseline: "
        f"every {config.interval} s per task). Status requests are fetch + multi_fetch; other "
        "requests are image downloads for posting. Poll cycles: tracker rounds for genbot, "
        "elapsed polling time / interval for the baseline. Finished→known: the provider's "
        "finish time to genbot storing the job as finished (what polling or the webhook "
        "costs); finished→posted: to the result message with its image on the platform.",
    ]
    return table


async def main(quick: bool = False) -> list[Table]:
    """The benchmark as ``python -m bench tracking [--quick]`` runs it."""
    config = QUICK if quick else FULL
    rows = await run_tracking(config)
    table = tracking_table(rows, config)
    if not quick:
        table.notes.append(draw(lambda: charts.tracking_requests(rows, REQUESTS_PNG)))
        table.notes.append(draw(lambda: charts.finished_to_posted(rows, POSTED_PNG)))
    return [table]
