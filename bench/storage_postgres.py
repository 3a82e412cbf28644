"""Benchmark 4b — storage, SQLite vs PostgreSQL, per operation at the same row count.

The same rows as :mod:`bench.storage` (jobs with random 12-character ids, one result message
per job over 1000 channels) are loaded into PostgreSQL with ``COPY`` (a throwaway cluster from
the machine's binaries, ``fsync=off`` as in the tests) after the schema is migrated; then the
same random keys are timed through :class:`storage.postgres.PostgresStore` as the awaiting
caller sees them (pool hop included): the button-press lookup ``job_for_message`` and the
compare-and-set ``transition``, plus a lease claim (``claim_jobs`` of 100 expired jobs, which
only a shared database needs under load). The driver's rows are the same statements on one
psycopg connection of its own (tuples back), taking turns with genbot's: what the query layer,
the pool and the records cost. The SQLite figures are measured in the same run
(:func:`bench.storage.run_storage`). ``python -m bench storage_postgres [--quick]``.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from bench.report import Table, percentile
from bench.storage import (
    ACTIONS,
    CHANNELS,
    FULL,
    QUICK,
    RESULT_URLS,
    TRANSITION,
    Keys,
    StorageConfig,
    Timing,
    alternately,
    run_storage,
)
from storage.postgres import PostgresStore
from storage.queries.jobs import SQL_JOB_FOR_MESSAGE
from storage.sql.dialect import POSTGRES
from tests.postgres import PostgresCluster, start_cluster

COPY_JOBS = (
    "COPY jobs (id, family, type, status, provider_id, requester_id, platform, workspace_id,"
    " channel_id, prompt, parameters, created_at, updated_at, owner, lease_until) FROM STDIN"
)
COPY_LINKS = "COPY job_messages (platform, channel_id, message_id, job_id, kind) FROM STDIN"
CLAIM_BATCH = 100
LOOKUP, MOVE = "message → job lookup", "status transition"


@dataclass
class PostgresResult:
    timings: list[Timing]
    rows: int
    setup_seconds: float
    server: str


async def fill(store: PostgresStore, keys: Keys) -> None:
    """Every job (processing, leased by nobody alive) and its result link, by COPY."""
    now = time.time()
    params = Jsonb({"process_mode": "fast", "aspect_ratio": "16:9"})
    async with store.db.connection() as conn:
        await conn.execute("DROP INDEX job_messages_by_message_id, jobs_by_status")
        async with conn.cursor() as cursor, cursor.copy(COPY_JOBS) as copy:
            for index in range(keys.rows):
                await copy.write_row((
                    keys.job_ids[index], "task", "imagine", "processing",
                    f"task-{index:09d}", f"u{index % 5000}", "discord", "g1",
                    keys.channel(index), f"a lighthouse at dusk, number {index}", params,
                    now, now, "gone-process", 0.0,
                ))  # fmt: skip
        async with conn.cursor() as cursor, cursor.copy(COPY_LINKS) as copy:
            for index in range(keys.rows):
                await copy.write_row(
                    ("discord", keys.channel(index), keys.message(index), keys.job_ids[index],
                     "result")
                )  # fmt: skip
        await conn.execute(
            "CREATE UNIQUE INDEX job_messages_by_message_id"
            " ON job_messages (platform, channel_id, message_id)"
        )
        await conn.execute("CREATE INDEX jobs_by_status ON jobs (status, created_at)")
        await conn.execute("ANALYZE")


async def measure(
    store: PostgresStore, driver: AsyncConnection[Any], keys: Keys, config: StorageConfig
) -> list[Timing]:
    """genbot's lookups and transitions taking turns with the driver's (``driver``: one
    connection of its own, the same statements, tuples back), then lease claims."""
    rng = random.Random(config.seed + 1)
    lookups = [rng.randrange(keys.rows) for _ in range(2 * config.samples)]
    moves = rng.sample(range(keys.rows), 2 * config.samples)
    rows, half = keys.rows, config.samples

    async def lookup(index: int) -> bool:
        job = await store.message_links.job_for_message(
            "discord", keys.channel(index), keys.message(index)
        )
        return job is not None and job.id == keys.job_ids[index]

    async def driver_lookup(index: int) -> bool:
        args = ("discord", keys.channel(index), keys.message(index))
        cursor = await driver.execute(POSTGRES.statement(SQL_JOB_FOR_MESSAGE), args)
        row = await cursor.fetchone()
        return row is not None and row[0] == keys.job_ids[index]

    async def transition(index: int) -> bool:
        return await store.jobs.transition(
            keys.job_ids[index],
            ("processing", "pending"),
            "finished",
            result_urls=["https://img.example/1.png"],
            actions=["upscale1", "upscale2", "upscale3", "upscale4", "reroll"],
        )

    async def driver_transition(index: int) -> bool:
        now = time.time()
        args = ("finished", now, RESULT_URLS, ACTIONS, now, keys.job_ids[index])
        cursor = await driver.execute(
            POSTGRES.statement(TRANSITION), (*args, "pending", "processing")
        )
        return cursor.rowcount == 1

    genbot, by_driver = "PostgreSQL", "PostgreSQL, driver: same SQL, one connection"
    timings = [
        *await alternately(
            [Timing(LOOKUP, genbot, rows), Timing(LOOKUP, by_driver, rows)],
            [lookup, driver_lookup],
            [lookups[:half], lookups[half:]],
        ),
        *await alternately(
            [Timing(MOVE, genbot, rows), Timing(MOVE, by_driver, rows)],
            [transition, driver_transition],
            [moves[:half], moves[half:]],
        ),
        Timing(f"lease claim of {CLAIM_BATCH} expired jobs", genbot, rows),
    ]
    for _ in range(max(config.samples // 20, 10)):
        started = time.perf_counter()
        claimed = await store.leasing.claim_jobs(["discord"], limit=CLAIM_BATCH)
        timings[-1].seconds.append(time.perf_counter() - started)
        timings[-1].correct += len(claimed) == CLAIM_BATCH
    return timings


async def run_postgres(config: StorageConfig, cluster: PostgresCluster) -> PostgresResult:
    url = await asyncio.to_thread(cluster.create_database)
    async with await PostgresStore.open(url, pool_size=2) as store:
        keys = await asyncio.to_thread(Keys, config.rows, config.seed)
        started = time.perf_counter()
        await fill(store, keys)
        setup = time.perf_counter() - started
        async with store.db.connection() as conn:
            cursor = await conn.execute("SHOW server_version")
            row = await cursor.fetchone()
        async with await AsyncConnection.connect(url, autocommit=True) as driver:
            timings = await measure(store, driver, keys, config)
    return PostgresResult(
        timings, config.rows, setup, f"PostgreSQL {row and row['server_version']}"
    )


def comparison_table(sqlite: list[Timing], postgres: PostgresResult) -> Table:
    """Per operation: SQLite (from bench.storage, this run) and PostgreSQL side by side."""
    table = Table(
        f"Storage: SQLite vs PostgreSQL at {postgres.rows:,} jobs and links",
        ["operation", "backend", "samples", "p50 ms", "p99 ms", "mean ms", "correct"],
        digits=3,
    )
    for timing in [*sqlite, *postgres.timings]:
        samples = timing.seconds
        table.add(
            timing.operation,
            timing.variant,
            len(samples),
            percentile(samples, 0.5) * 1000,
            percentile(samples, 0.99) * 1000,
            sum(samples) / len(samples) * 1000 if samples else None,
            f"{timing.correct}/{len(samples)}",
        )
    table.notes = [
        f"{postgres.server}, local Unix socket, fsync off (a throwaway cluster); load by COPY "
        f"in {postgres.setup_seconds:.1f} s ({CHANNELS} channels). SQLite: WAL, "
        "synchronous=NORMAL, its worker-thread hop included. Each transition commits.",
    ]
    return table


async def postgres_figures(config: StorageConfig) -> PostgresResult:
    cluster = await asyncio.to_thread(start_cluster)
    try:
        return await run_postgres(config, cluster)
    finally:
        await asyncio.to_thread(cluster.stop)


async def main(quick: bool = False) -> list[Table]:
    """SQLite and PostgreSQL at the same rows, in one run."""
    config = QUICK if quick else FULL
    sqlite = await run_storage(config)
    sqlite_rows = [
        Timing(
            t.operation,
            "SQLite" if t.variant == "genbot (indexed)" else f"SQLite, {t.variant}",
            t.rows,
            t.seconds,
            t.correct,
        )
        for t in sqlite.timings
        if not t.variant.startswith("baseline")
    ]
    return [comparison_table(sqlite_rows, await postgres_figures(config))]
