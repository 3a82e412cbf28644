"""Benchmark — split: the CPU the same PostgreSQL transactions cost when one process makes them
and when three processes share them, with no genbot in it (asyncio and psycopg only).

Issue 32 compares a cluster of three ``genbot run`` processes with one by the CPU each uses per
job (``bench scale``). Part of what three pay more is not genbot's: on this 2-core machine a
process that does a third of the work wakes for less each time, and pays the wake-up (the event
loop's turn, the system calls, caches the other processes cooled) on less. This benchmark
measures that part alone, as a floor under the ratio ``bench scale`` reports.

Each worker process runs an event loop with ``CONNECTIONS`` connections and starts
transactions on one schedule for ``SECONDS`` seconds: the whole ``RATE`` a second, evenly
spaced, the keys in turn; worker *i* of *n* makes every *n*-th of them from the *i*-th, so three
workers together send exactly what one sends alone (the same moments, the same keys: never
three at once on one key's lock). A transaction is what genbot's storage sends for a
small write: ``BEGIN``, a transaction-scoped advisory lock on one of ten keys, an ``INSERT`` of
a 200-byte row and a count of that key's latest rows (at most ``LATEST``, by its index), and
``COMMIT``, pipelined in one round trip. The table is emptied before each run, so every run asks
the same of PostgreSQL.
Each worker reports its own CPU seconds (``time.process_time``) over that window; PostgreSQL's
(its server and every backend) is read from ``/proc`` from the common start to the last
worker's exit. The sizes run 1, 3, 3, 1, 1, 3, so a drift of the machine through the run does
not fall on one size; the spread of the runs shows beside their means. A worker that starts
more than ``LATE_LIMIT`` seconds after the common moment fails the run.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass

import psycopg

from bench.cpu import postmaster_pid, server_cpu_seconds
from bench.report import Table
from tests.postgres import PostgresCluster, start_cluster

RATE = 300.0
"""Transactions a second, the whole of them (about genbot's in-flight rate at 3000 jobs)."""
SECONDS = 10.0
QUICK_SECONDS = 3.0
CONNECTIONS = 4
SIZES = (1, 3, 3, 1, 1, 3)
START_DELAY = 2.0
"""Seconds between spawning the workers and their common start (Python's start-up)."""
LATE_LIMIT = 0.25
"""Seconds after the common start past which a worker's start fails the run."""
KEYS = 10
ROW = "x" * 200
LATEST = 20
SQL_TABLE = (
    "CREATE TABLE IF NOT EXISTS split_rows (id bigserial PRIMARY KEY, k text, v text)",
    "CREATE INDEX IF NOT EXISTS split_rows_by_key ON split_rows (k, id)",
)
SQL_EMPTY = "TRUNCATE split_rows"
SQL_LOCK = "SELECT pg_advisory_xact_lock(hashtext(%s))"
SQL_INSERT = "INSERT INTO split_rows (k, v) VALUES (%s, %s)"
SQL_COUNT = (
    "SELECT count(*) FROM"
    " (SELECT id FROM split_rows WHERE k = %s ORDER BY id DESC LIMIT %s) AS latest"
)
WORKER_TIMEOUT = 60.0


@dataclass(frozen=True)
class WorkerResult:
    """What one worker made in the window and the CPU seconds it took."""

    transactions: int
    cpu: float
    late: float = 0.0
    """Seconds after the common start it began."""


@dataclass(frozen=True)
class SplitRun:
    """One run: its number of processes and each one's result, PostgreSQL's CPU seconds."""

    processes: int
    workers: tuple[WorkerResult, ...]
    postgres: float

    @property
    def transactions(self) -> int:
        return sum(worker.transactions for worker in self.workers)

    @property
    def ms_per_transaction(self) -> float:
        """The processes' CPU per transaction, all of them together."""
        return 1000 * sum(worker.cpu for worker in self.workers) / max(self.transactions, 1)

    @property
    def postgres_ms_per_transaction(self) -> float:
        return 1000 * self.postgres / max(self.transactions, 1)


async def transactions(
    url: str, seconds: float, start: float, *, worker: int = 0, workers: int = 1
) -> WorkerResult:
    """From ``start`` (a ``time.time()``) for ``seconds``, over ``CONNECTIONS`` connections,
    ``worker``'s share of ``workers`` of the schedule (see the module docstring); every
    transaction made, with the CPU it took."""
    connections = [await psycopg.AsyncConnection.connect(url) for _ in range(CONNECTIONS)]
    queue: asyncio.Queue[str] = asyncio.Queue()

    async def serve(connection: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
        while True:
            key = await queue.get()
            async with connection.transaction(), connection.pipeline():
                await connection.execute(SQL_LOCK, (key,))
                await connection.execute(SQL_INSERT, (key, ROW))
                await connection.execute(SQL_COUNT, (key, LATEST))
            queue.task_done()

    servers = [asyncio.create_task(serve(connection)) for connection in connections]
    try:
        await asyncio.sleep(max(0.0, start - time.time()))
        late = max(0.0, time.time() - start)
        began, cpu = time.monotonic() - late, time.process_time()
        made = 0
        step = worker
        while (due := began + step / RATE) < began + seconds:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            queue.put_nowait(f"key{step % KEYS}")
            made += 1
            step += workers
        await asyncio.wait_for(queue.join(), WORKER_TIMEOUT)
        return WorkerResult(made, time.process_time() - cpu, late)
    finally:
        for server in servers:
            server.cancel()
        await asyncio.gather(*servers, return_exceptions=True)
        for connection in connections:
            await connection.close()


async def run(cluster: PostgresCluster, url: str, processes: int, seconds: float) -> SplitRun:
    """``processes`` workers sharing the schedule for ``seconds``, from one moment."""
    start = time.time() + START_DELAY
    children = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.split",
            *(url, str(seconds), str(start), str(worker), str(processes)),
            stdout=asyncio.subprocess.PIPE,
        )
        for worker in range(processes)
    ]
    server = postmaster_pid(cluster.folder / "data")
    await asyncio.sleep(max(0.0, start - time.time()))
    before = server_cpu_seconds(server)
    outputs = await asyncio.wait_for(
        asyncio.gather(*(child.communicate() for child in children)),
        START_DELAY + seconds + WORKER_TIMEOUT,
    )
    postgres = server_cpu_seconds(server) - before
    for child in children:
        if child.returncode != 0:
            raise RuntimeError(f"a worker exited with status {child.returncode}")
    workers = tuple(WorkerResult(**json.loads(stdout)) for stdout, _ in outputs)
    if any(worker.late > LATE_LIMIT for worker in workers):
        late = max(worker.late for worker in workers)
        raise RuntimeError(f"a worker started {late:.2f} s late: the machine is too busy")
    return SplitRun(processes, workers, postgres)


def split_table(runs: list[SplitRun]) -> Table:
    """The runs in order, each against the mean of the one-process runs, and the mean of the
    three-process runs against it."""
    alone = [run.ms_per_transaction for run in runs if run.processes == 1]
    shared = [run.ms_per_transaction for run in runs if run.processes == 3]
    baseline = sum(alone) / len(alone)
    table = Table(
        "Split: the same PostgreSQL transactions from 1 process and shared by 3 (no genbot)",
        [
            "processes",
            "transactions",
            "per process ms / tx",
            "processes ms / tx",
            "× 1 process",
            "PostgreSQL ms / tx",
        ],
        digits=3,
    )
    for run in runs:
        each = " / ".join(f"{1000 * w.cpu / max(w.transactions, 1):.3f}" for w in run.workers)
        table.add(
            run.processes,
            run.transactions,
            each,
            run.ms_per_transaction,
            run.ms_per_transaction / baseline,
            run.postgres_ms_per_transaction,
        )
    table.notes.append(
        f"{RATE:.0f} transactions a second in all, {CONNECTIONS} connections a process; "
        "'× 1 process' against the mean of this run's one-process rows."
    )
    if shared:
        mean = sum(shared) / len(shared)
        table.notes.append(f"3 processes ÷ 1, the means: {mean / baseline:.3f}.")
    return table


async def main(quick: bool) -> list[Table]:
    seconds = QUICK_SECONDS if quick else SECONDS
    cluster = await asyncio.to_thread(start_cluster)
    try:
        url = await asyncio.to_thread(cluster.create_database)
        runs = []
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as connection:
            for statement in SQL_TABLE:
                await connection.execute(statement)
            for processes in SIZES:
                await connection.execute(SQL_EMPTY)
                runs.append(await run(cluster, url, processes, seconds))
    finally:
        await asyncio.to_thread(cluster.stop)
    return [split_table(runs)]


def worker(argv: list[str]) -> None:
    """A worker process: ``url seconds start worker workers``; prints its
    :class:`WorkerResult`."""
    url, seconds, start, share, shares = argv
    result = asyncio.run(
        transactions(url, float(seconds), float(start), worker=int(share), workers=int(shares))
    )
    print(json.dumps({"transactions": result.transactions, "cpu": result.cpu, "late": result.late}))


if __name__ == "__main__":
    worker(sys.argv[1:])
