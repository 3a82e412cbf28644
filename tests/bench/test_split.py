"""The split benchmark: workers sharing the schedule make exactly what one makes alone (the same
transactions, on the same keys), and the table compares each run with the mean of the
one-process runs."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest

from bench.split import (
    RATE,
    SQL_EMPTY,
    SQL_TABLE,
    SplitRun,
    WorkerResult,
    split_table,
    transactions,
)
from tests.postgres import PostgresCluster


async def test_workers_sharing_the_schedule_make_what_one_makes_alone(
    postgres: PostgresCluster,
) -> None:
    url = postgres.create_database()
    seconds = 9.5 / RATE
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as connection:
        for statement in SQL_TABLE:
            await connection.execute(statement)
        alone = await transactions(url, seconds, time.time())
        keys = "SELECT k, count(*) FROM split_rows GROUP BY k ORDER BY k"
        assert alone.transactions == 10
        assert await (await connection.execute(keys)).fetchall() == [
            (f"key{n}", 1) for n in range(10)
        ]
        await connection.execute(SQL_EMPTY)
        start = time.time()
        shared = await asyncio.gather(
            *(transactions(url, seconds, start, worker=n, workers=2) for n in range(2))
        )
        assert [result.transactions for result in shared] == [5, 5]
        assert await (await connection.execute(keys)).fetchall() == [
            (f"key{n}", 1) for n in range(10)
        ]


def test_each_run_is_told_against_the_mean_of_the_one_process_runs() -> None:
    def run(processes: int, ms: float) -> SplitRun:
        each = 300 // processes
        workers = tuple(WorkerResult(each, ms * each / 1000) for _ in range(processes))
        return SplitRun(processes, workers, 0.06)

    table = split_table([run(1, 1.0), run(3, 1.2), run(1, 1.2), run(3, 1.5)])
    assert [row[4] for row in table.rows] == pytest.approx(
        [1 / 1.1, 1.2 / 1.1, 1.2 / 1.1, 1.5 / 1.1]
    )
    assert [row[1] for row in table.rows] == [300, 300, 300, 300]
    assert [row[5] for row in table.rows] == pytest.approx([0.2] * 4)
    assert table.notes[-1] == "3 processes ÷ 1, the means: 1.227."
