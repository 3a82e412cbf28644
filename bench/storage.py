"""Benchmark 4 — storage: message → job lookup and job status transition at a million rows.

A fresh database (the real schema, opened by :class:`storage.SqliteStore`) gets ``rows`` jobs with
random-looking 12-character ids (like :func:`storage.new_job_id`) and one result message per
job (snowflake-like message ids over 1000 channels), written through the database's
:meth:`~storage.sqlite.database.SqliteDatabase.run` in large transactions with the secondary
indexes rebuilt after the load. Then, with random keys:

- lookup: :meth:`storage.SqliteStore.job_for_message` (the button-press lookup), timed as the caller
  sees it (worker hop included);
- transition: :meth:`storage.SqliteStore.transition` ``processing → finished`` with result fields,
  each on a different job (a committed write each).

Two baselines, in the same database and run: the driver (the same SQL in one worker call, a
tuple back: what genbot's query layer and records cost on top of sqlite3, the two taking turns),
and the same SQL on copies of the two tables without their indexes (``CREATE TABLE … AS
SELECT``): a scan of a million rows is slow, so that baseline takes fewer samples.
"""

from __future__ import annotations

import asyncio
import base64
import random
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from bench.report import Table, percentile
from storage import SqliteStore
from storage.queries.jobs import SQL_JOB_FOR_MESSAGE

BATCH = 100_000
CHANNELS = 1000
SNOWFLAKE_BASE = 1_200_000_000_000_000_000
INSERT_JOB = (
    "INSERT INTO jobs (id, family, type, status, provider_id, requester_id, platform,"
    " workspace_id, channel_id, prompt, parameters, created_at, updated_at)"
    " VALUES (?, 'task', 'imagine', 'processing', ?, ?, 'discord', 'g1', ?, ?, ?, ?, ?)"
)
INSERT_LINK = (
    "INSERT INTO job_messages (platform, channel_id, message_id, job_id, kind)"
    " VALUES ('discord', ?, ?, ?, 'result')"
)
SECONDARY_INDEXES = (
    "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
    " AND tbl_name IN ('jobs', 'job_messages')"
)
PLAIN_LOOKUP = SQL_JOB_FOR_MESSAGE.replace("job_messages AS m", "plain_job_messages AS m")
TRANSITION = (
    "UPDATE jobs SET status = ?, updated_at = ?, result_urls = ?, actions = ?,"
    " finished_at = COALESCE(finished_at, ?) WHERE id = ? AND status IN (?, ?)"
)
"""The statement :meth:`storage.Store.transition` sends for the benchmark's move."""
PLAIN_TRANSITION = TRANSITION.replace("UPDATE jobs", "UPDATE plain_jobs")
ROUNDS = 6
"""genbot and the driver take turns, this many each per operation."""
RESULT_URLS = '["https://img.example/1.png"]'
ACTIONS = '["upscale1","upscale2","upscale3","upscale4","reroll"]'


@dataclass(frozen=True)
class StorageConfig:
    """Row count and samples; the baseline takes ``baseline_samples`` per operation."""

    rows: int = 1_000_000
    samples: int = 3000
    baseline_samples: int = 50
    seed: int = 11
    directory: str | None = None


FULL = StorageConfig()
QUICK = StorageConfig(rows=100_000, samples=2000, baseline_samples=100)


@dataclass
class Timing:
    """Latencies of one operation (seconds) and how many calls gave the expected answer."""

    operation: str
    variant: str
    rows: int
    seconds: list[float] = field(default_factory=list)
    correct: int = 0


@dataclass
class StorageResult:
    """Every timing plus setup figures."""

    timings: list[Timing]
    rows: int
    setup_seconds: float
    copy_seconds: float
    database_mb: float
    plans: dict[str, str] = field(default_factory=dict)


class Keys:
    """The deterministic keys of row ``i``: job id, provider id, channel, message id."""

    def __init__(self, rows: int, seed: int) -> None:
        rng = random.Random(seed)
        self.rows = rows
        self.job_ids = [base64.urlsafe_b64encode(rng.randbytes(9)).decode() for _ in range(rows)]

    def channel(self, index: int) -> str:
        return str(900_000_000_000_000_000 + index % CHANNELS)

    def message(self, index: int) -> str:
        return str(SNOWFLAKE_BASE + index * 4_194_304 + index % 4096)


@contextmanager
def write_transaction(db: Database) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` on the worker thread (rolled back on error)."""
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.conn.execute("ROLLBACK")
        raise
    db.conn.execute("COMMIT")


def _job_rows(keys: Keys, start: int, stop: int, now: float) -> Iterator[tuple[Any, ...]]:
    for index in range(start, stop):
        yield (
            keys.job_ids[index],
            f"task-{index:09d}",
            f"u{index % 5000}",
            keys.channel(index),
            f"a lighthouse at dusk, number {index} --ar 16:9 --v 6",
            '{"process_mode":"fast","aspect_ratio":"16:9"}',
            now,
            now,
        )


def _link_rows(keys: Keys, start: int, stop: int) -> Iterator[tuple[str, str, str]]:
    for index in range(start, stop):
        yield keys.channel(index), keys.message(index), keys.job_ids[index]


def fill(db: Database, keys: Keys) -> None:
    """Write every job, then every link, ``BATCH`` rows per transaction. The tables' secondary
    indexes are dropped for the load and rebuilt after it from their own definitions (the
    usual bulk-load order; the schema ends up exactly as the migrations made it)."""
    indexes = db.conn.execute(SECONDARY_INDEXES).fetchall()
    with write_transaction(db):
        for name, _ in indexes:
            db.conn.execute(f'DROP INDEX "{name}"')
    now = time.time()
    for start in range(0, keys.rows, BATCH):
        stop = min(start + BATCH, keys.rows)
        with write_transaction(db):
            db.conn.executemany(INSERT_JOB, _job_rows(keys, start, stop, now))
    for start in range(0, keys.rows, BATCH):
        stop = min(start + BATCH, keys.rows)
        with write_transaction(db):
            db.conn.executemany(INSERT_LINK, _link_rows(keys, start, stop))
    with write_transaction(db):
        for _, definition in indexes:
            db.conn.execute(definition)


def copy_without_indexes(db: Database) -> None:
    """``plain_jobs`` and ``plain_job_messages``: the same rows, no index, no key. Then the
    write-ahead log is checkpointed, so measuring starts from a settled database."""
    db.conn.execute("CREATE TABLE plain_jobs AS SELECT * FROM jobs")
    db.conn.execute("CREATE TABLE plain_job_messages AS SELECT * FROM job_messages")
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def query_plans(db: Database) -> dict[str, str]:
    """SQLite's plans for both lookups and both transitions (proof of index or scan)."""
    lookup = ("discord", "c", "m")
    move = ("finished", 0.0, "[]", "[]", 0.0, "id", "pending", "processing")
    queries = (
        ("lookup, genbot", SQL_JOB_FOR_MESSAGE, lookup),
        ("lookup, baseline", PLAIN_LOOKUP, lookup),
        ("transition, genbot", TRANSITION, move),
        ("transition, baseline", PLAIN_TRANSITION, move),
    )
    return {
        name: "; ".join(str(row[-1]) for row in db.conn.execute("EXPLAIN QUERY PLAN " + sql, args))
        for name, sql, args in queries
    }


async def timed(
    timing: Timing, count: int, call: Callable[[int], Awaitable[bool]], picks: list[int]
) -> Timing:
    """Run ``call(index)`` for the first ``count`` of ``picks``, timing each."""
    for index in picks[:count]:
        started = time.perf_counter()
        ok = await call(index)
        timing.seconds.append(time.perf_counter() - started)
        timing.correct += ok
    return timing


async def alternately(
    timings: list[Timing], calls: list[Callable[[int], Awaitable[bool]]], picks: list[list[int]]
) -> list[Timing]:
    """``calls[n]`` on ``picks[n]``, in ``ROUNDS`` turns (a busy moment of the machine falls
    on each alike), timing each call into ``timings[n]``."""
    for turn in range(ROUNDS):
        for timing, call, chosen in zip(timings, calls, picks, strict=True):
            share = -(-len(chosen) // ROUNDS)
            await timed(timing, share, call, chosen[turn * share :])
    return timings


async def measure(store: SqliteStore, keys: Keys, config: StorageConfig) -> list[Timing]:
    """The six timings: lookup and transition, by genbot, by the driver, and unindexed."""
    rng = random.Random(config.seed + 1)
    wanted = min(2 * config.samples + config.baseline_samples, keys.rows)
    lookups = [rng.randrange(keys.rows) for _ in range(2 * config.samples)]
    transitions = rng.sample(range(keys.rows), wanted)
    genbot_moves, driver_moves = (
        transitions[: config.samples],
        transitions[config.samples :][: config.samples],
    )
    plain_moves = transitions[2 * config.samples :]
    rows = keys.rows

    async def lookup(index: int) -> bool:
        job = await store.message_links.job_for_message(
            "discord", keys.channel(index), keys.message(index)
        )
        return job is not None and job.id == keys.job_ids[index]

    async def driver_lookup(index: int) -> bool:
        args = ("discord", keys.channel(index), keys.message(index))
        row = await store.db.run(lambda db: db.conn.execute(SQL_JOB_FOR_MESSAGE, args).fetchone())
        return row is not None and row[0] == keys.job_ids[index]

    async def driver_transition(index: int) -> bool:
        now = time.time()
        args = ("finished", now, RESULT_URLS, ACTIONS, now, keys.job_ids[index])
        moved = await store.db.run(
            lambda db: db.conn.execute(TRANSITION, (*args, "pending", "processing")).rowcount
        )
        return moved == 1

    async def plain_lookup(index: int) -> bool:
        args = ("discord", keys.channel(index), keys.message(index))
        row = await store.db.run(lambda db: db.conn.execute(PLAIN_LOOKUP, args).fetchone())
        return row is not None and row[0] == keys.job_ids[index]

    async def transition(index: int) -> bool:
        return await store.jobs.transition(
            keys.job_ids[index],
            ("processing", "pending"),
            "finished",
            result_urls=["https://img.example/1.png"],
            actions=["upscale1", "upscale2", "upscale3", "upscale4", "reroll"],
        )

    async def plain_transition(index: int) -> bool:
        def work(db: Database) -> bool:
            now = time.time()
            args = ("finished", now, RESULT_URLS, ACTIONS, now, keys.job_ids[index])
            with write_transaction(db):
                moved = db.conn.execute(PLAIN_TRANSITION, (*args, "pending", "processing"))
            return moved.rowcount == 1

        return await store.db.run(work)

    label, driver = "genbot (indexed)", "driver: same SQL, one worker call"
    plain = "baseline: same SQL, no index"
    looked = await alternately(
        [Timing("message → job lookup", label, rows), Timing("message → job lookup", driver, rows)],
        [lookup, driver_lookup],
        [lookups[: config.samples], lookups[config.samples :]],
    )
    moved = await alternately(
        [Timing("status transition", label, rows), Timing("status transition", driver, rows)],
        [transition, driver_transition],
        [genbot_moves, driver_moves],
    )
    return [
        *looked,
        await timed(
            Timing("message → job lookup", plain, rows),
            config.baseline_samples,
            plain_lookup,
            lookups,
        ),
        *moved,
        await timed(
            Timing("status transition", plain, rows),
            len(plain_moves),
            plain_transition,
            plain_moves,
        ),
    ]


def directory_megabytes(directory: Path) -> float:
    """The size of the files in ``directory`` (the database, its WAL and shared memory)."""
    return sum(path.stat().st_size for path in directory.iterdir()) / 1e6


async def run_storage(config: StorageConfig = FULL) -> StorageResult:
    """Build the database in a temporary directory, measure, delete it."""
    with tempfile.TemporaryDirectory(prefix="genbot-bench-", dir=config.directory) as directory:
        path = Path(directory) / "bench.db"
        store = await SqliteStore.open(path)
        try:
            keys = await asyncio.to_thread(Keys, config.rows, config.seed)
            started = time.perf_counter()
            await store.db.run(lambda db: fill(db, keys))
            setup = time.perf_counter() - started
            started = time.perf_counter()
            await store.db.run(copy_without_indexes)
            copying = time.perf_counter() - started
            plans = await store.db.run(query_plans)
            timings = await measure(store, keys, config)
        finally:
            await store.close()
        size = await asyncio.to_thread(directory_megabytes, Path(directory))
    return StorageResult(timings, config.rows, setup, copying, size, plans)


def storage_table(result: StorageResult) -> Table:
    """genbot and baseline side by side, in milliseconds."""
    table = Table(
        f"Storage: {result.rows:,} jobs and {result.rows:,} message links (SQLite, WAL)",
        ["operation", "variant", "rows", "samples", "p50 ms", "p99 ms", "mean ms", "correct"],
        digits=3,
    )
    for timing in result.timings:
        samples = timing.seconds
        table.add(
            timing.operation,
            timing.variant,
            f"{timing.rows:,}",
            len(samples),
            percentile(samples, 0.5) * 1000,
            percentile(samples, 0.99) * 1000,
            sum(samples) / len(samples) * 1000 if samples else None,
            f"{timing.correct}/{len(samples)}",
        )
    table.notes = [
        f"Setup: {result.rows:,} jobs + {result.rows:,} links in "
        f"{result.setup_seconds:.1f} s ({2 * result.rows / result.setup_seconds:,.0f} rows/s, "
        f"{BATCH:,} rows per transaction, secondary indexes rebuilt after the load); "
        f"unindexed copies in {result.copy_seconds:.1f} s; "
        f"database {result.database_mb:,.0f} MB. Times are the awaiting caller's (the store's "
        "worker-thread hop included); transitions commit (WAL, synchronous=NORMAL).",
        "Driver: the statement genbot sends, in one worker call with a tuple back (no rows as "
        f"dicts, no records); genbot and the driver take turns ({ROUNDS} rounds), each call on "
        "its own random key (a transition on its own job). Baseline: the identical lookup JOIN / "
        "compare-and-set UPDATE on copies of the tables without indexes (a full scan per call), "
        "fewer samples because each call scans.",
        *(f"Query plan, {name}: {plan}" for name, plan in result.plans.items()),
    ]
    return table


async def main(quick: bool = False) -> list[Table]:
    """The benchmark as ``python -m bench storage [--quick]`` runs it."""
    return [storage_table(await run_storage(QUICK if quick else FULL))]
