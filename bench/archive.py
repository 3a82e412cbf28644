"""Benchmark 4d — the archive's search (issue 28): ``/jobs`` at a million posted jobs, SQLite
and PostgreSQL in one run.

``rows`` posted jobs of ``users`` requesters in one workspace, newest last, each prompt 8 words
drawn from a 5,000-word vocabulary with Zipf weights (a few words are in most prompts, most in
few), are loaded into each backend with the schema the migrations make (SQLite: the FTS5 index
rebuilt after the load; PostgreSQL: ``COPY``, the GIN index made after it). Then, through
:meth:`storage.JobArchive.search` as the awaiting caller sees it (a page: 6 jobs asked for):

- **a word of yours**: a user finds one of their jobs by one word of its prompt;
- **two words of yours**: the same with two words of that prompt;
- **a common word**: a user searches the most frequent word (in about 1 prompt in 3);
- **your newest**: a user's first page, no words;
- **the workspace, a word** (admins): everyone's jobs by a word of a random prompt.

Baseline, in the same run and database: the same page found with ``prompt LIKE '%word%'``
(no full-text index, the same b-tree indexes), fewer samples. ``python -m bench archive``.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.report import Table, percentile
from storage import JobSearch, SqliteStore, Store
from storage.postgres import PostgresStore
from tests.postgres import PostgresCluster, start_cluster

VOCABULARY = 5000
WORDS_PER_PROMPT = 8
PAGE = 6
BATCH = 100_000
COLUMNS = (
    "id, family, type, status, requester_id, platform, workspace_id, channel_id, prompt,"
    " created_at, updated_at"
)
INSERT_JOB = f"INSERT INTO jobs ({COLUMNS}) VALUES (?, 'task', 'imagine', 'posted', ?, 'discord',"
INSERT_JOB += " 'g1', ?, ?, ?, ?)"
BASELINE = (
    "SELECT * FROM jobs WHERE platform = 'discord' AND status = 'posted' AND requester_id = ?"
    " AND workspace_id = 'g1' AND prompt LIKE ? ORDER BY created_at DESC, id DESC LIMIT 6"
)


@dataclass(frozen=True)
class ArchiveConfig:
    rows: int = 1_000_000
    users: int = 5000
    samples: int = 400
    baseline_samples: int = 40
    seed: int = 11


FULL = ArchiveConfig()
QUICK = ArchiveConfig(rows=20_000, users=200, samples=60, baseline_samples=10)


@dataclass
class Timing:
    operation: str
    backend: str
    seconds: list[float] = field(default_factory=list)
    found: int = 0


class Prompts:
    """The deterministic prompt, requester and time of job ``i``."""

    def __init__(self, config: ArchiveConfig) -> None:
        rng = random.Random(config.seed)
        weights = [1 / (rank + 1) for rank in range(VOCABULARY)]
        self.config = config
        self.words = [
            rng.choices(range(VOCABULARY), weights, k=WORDS_PER_PROMPT) for _ in range(config.rows)
        ]

    def prompt(self, index: int) -> str:
        return " ".join(f"w{word}" for word in self.words[index])

    def row(self, index: int) -> tuple[Any, ...]:
        user = f"u{index % self.config.users}"
        return (f"j{index:011d}", user, f"c{index % 100}", self.prompt(index), index, index)

    def rows(self, start: int, stop: int) -> Iterator[tuple[Any, ...]]:
        return (self.row(index) for index in range(start, stop))


async def fill_sqlite(store: SqliteStore, prompts: Prompts) -> None:
    def work(db: Any) -> None:
        conn = db.conn
        conn.execute("DROP TRIGGER jobs_words_insert")
        for start in range(0, prompts.config.rows, BATCH):
            conn.execute("BEGIN IMMEDIATE")
            stop = min(start + BATCH, prompts.config.rows)
            conn.executemany(INSERT_JOB, prompts.rows(start, stop))
            conn.execute("COMMIT")
        conn.execute("INSERT INTO job_words (job_words) VALUES ('rebuild')")
        conn.execute(
            "CREATE TRIGGER jobs_words_insert AFTER INSERT ON jobs BEGIN INSERT INTO job_words"
            " (rowid, prompt) VALUES (new.rowid, new.prompt); END"
        )
        conn.execute("ANALYZE")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    await store.db.run(work)


async def fill_postgres(store: PostgresStore, prompts: Prompts) -> None:
    async with store.db.connection() as conn:
        await conn.execute("DROP INDEX jobs_by_prompt_words")
        copy_sql = f"COPY jobs ({COLUMNS}) FROM STDIN"
        async with conn.cursor() as cursor, cursor.copy(copy_sql) as copy:
            for index in range(prompts.config.rows):
                job_id, user, channel, prompt, created, updated = prompts.row(index)
                await copy.write_row(
                    (job_id, "task", "imagine", "posted", user, "discord", "g1", channel,
                     prompt, created, updated)
                )  # fmt: skip
        await conn.execute("CREATE INDEX jobs_by_prompt_words ON jobs USING GIN (prompt_words)")
        await conn.execute("ANALYZE")


Search = Callable[[random.Random], Awaitable[bool]]


def searches(store: Store, prompts: Prompts) -> dict[str, Search]:
    """Each operation: one random search, True when it finds what it must."""
    config, common = prompts.config, "w0"

    def mine(rng: random.Random) -> tuple[int, str]:
        index = rng.randrange(config.rows)
        return index, f"u{index % config.users}"

    async def page(search: JobSearch) -> list[str]:
        return [job.id for job in await store.archive.search(search, PAGE)]

    def of(user: str | None, *words: str) -> JobSearch:
        return JobSearch(platform="discord", requester_id=user, workspace_id="g1", words=words)

    async def a_word(rng: random.Random) -> bool:
        index, user = mine(rng)
        word = f"w{max(prompts.words[index])}"
        return bool(await page(of(user, word)))

    async def two_words(rng: random.Random) -> bool:
        index, user = mine(rng)
        first, second = sorted(set(prompts.words[index]))[-2:] or [0, 0]
        return bool(await page(of(user, f"w{first}", f"w{second}")))

    async def common_word(rng: random.Random) -> bool:
        _, user = mine(rng)
        return bool(await page(of(user, common)))

    async def newest(rng: random.Random) -> bool:
        _, user = mine(rng)
        return len(await page(of(user))) == PAGE

    async def workspace(rng: random.Random) -> bool:
        index = rng.randrange(config.rows)
        word = f"w{rng.choice(prompts.words[index])}"
        return bool(await page(of(None, word)))

    return {
        "a word of yours": a_word,
        "two words of yours": two_words,
        "a common word (w0)": common_word,
        "your newest (no words)": newest,
        "the workspace, a word (admins)": workspace,
    }


async def baseline(store: Store, prompts: Prompts, rng: random.Random) -> bool:
    """The first search without the full-text index: ``LIKE`` over the user's jobs."""
    index = rng.randrange(prompts.config.rows)
    user, word = f"u{index % prompts.config.users}", f"w{max(prompts.words[index])}"
    rows = await store.db.fetch_all(BASELINE, (user, f"%{word} %"))
    rows += await store.db.fetch_all(BASELINE, (user, f"%{word}"))
    return bool(rows)


async def measure(store: Store, prompts: Prompts, backend: str) -> list[Timing]:
    config = prompts.config
    timings: list[Timing] = []
    for operation, search in searches(store, prompts).items():
        timing = Timing(operation, backend)
        rng = random.Random(config.seed + len(timings))
        for _ in range(config.samples):
            started = time.perf_counter()
            timing.found += await search(rng)
            timing.seconds.append(time.perf_counter() - started)
        timings.append(timing)
    timing = Timing("a word of yours", f"{backend}, baseline: LIKE, no full-text index")
    rng = random.Random(config.seed)
    for _ in range(config.baseline_samples):
        started = time.perf_counter()
        timing.found += await baseline(store, prompts, rng)
        timing.seconds.append(time.perf_counter() - started)
    timings.append(timing)
    return timings


async def run_archive(
    config: ArchiveConfig, cluster: PostgresCluster | None = None
) -> tuple[list[Timing], dict[str, float]]:
    """Both backends, loaded and measured (PostgreSQL: a database in ``cluster``, else in a
    throwaway cluster of its own)."""
    prompts = await asyncio.to_thread(Prompts, config)
    setup: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="genbot-bench-") as directory:
        store = await SqliteStore.open(Path(directory) / "archive.db")
        try:
            started = time.perf_counter()
            await fill_sqlite(store, prompts)
            setup["SQLite"] = time.perf_counter() - started
            timings = await measure(store, prompts, "SQLite")
        finally:
            await store.close()
    own = cluster is None
    server = await asyncio.to_thread(start_cluster) if cluster is None else cluster
    try:
        postgres = await PostgresStore.open(server.create_database(), pool_size=2)
        try:
            started = time.perf_counter()
            await fill_postgres(postgres, prompts)
            setup["PostgreSQL"] = time.perf_counter() - started
            timings += await measure(postgres, prompts, "PostgreSQL")
        finally:
            await postgres.close()
    finally:
        if own:
            await asyncio.to_thread(server.stop)
    return timings, setup


def archive_table(config: ArchiveConfig, timings: list[Timing], setup: dict[str, float]) -> Table:
    table = Table(
        f"The archive's search: {config.rows:,} posted jobs of {config.users:,} users",
        ["search", "backend", "samples", "p50 ms", "p99 ms", "found"],
        digits=2,
    )
    for timing in timings:
        samples = timing.seconds
        table.add(
            timing.operation,
            timing.backend,
            len(samples),
            percentile(samples, 0.5) * 1000,
            percentile(samples, 0.99) * 1000,
            f"{timing.found}/{len(samples)}",
        )
    loads = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in setup.items())
    table.notes = [
        f"Load (rows, then the full-text index, then ANALYZE): {loads}. A page asks for "
        f"{PAGE} jobs; times are the awaiting caller's. Prompts: {WORDS_PER_PROMPT} words of "
        f"{VOCABULARY:,} with Zipf weights. Baseline: the same page by LIKE on the prompt.",
    ]
    return table


async def main(quick: bool = False) -> list[Table]:
    """The benchmark as ``python -m bench archive [--quick]`` runs it."""
    config = QUICK if quick else FULL
    timings, setup = await run_archive(config)
    return [archive_table(config, timings, setup)]
