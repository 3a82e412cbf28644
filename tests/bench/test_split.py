"""The split benchmark: a worker makes every transaction its rate and window call for, and the
table compares each run with the mean of the one-process runs."""

from __future__ import annotations

import time

import psycopg
import pytest

from bench.split import SQL_TABLE, SplitRun, WorkerResult, split_table, transactions
from tests.postgres import PostgresCluster


async def test_a_worker_makes_a_transaction_every_step_of_its_rate_and_counts_them(
    postgres: PostgresCluster,
) -> None:
    url = postgres.create_database()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as connection:
        for statement in SQL_TABLE:
            await connection.execute(statement)
        result = await transactions(url, rate=40.0, seconds=0.25, start=time.time())
        rows = await (await connection.execute("SELECT count(*) FROM split_rows")).fetchone()
    assert result.transactions == 10
    assert rows == (10,)
    assert result.cpu > 0


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
