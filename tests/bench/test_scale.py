"""The scale benchmark's own waits: few counts, on one connection, the end still seen at once."""

from __future__ import annotations

import contextlib
import math

import psycopg
import pytest

from bench.attribution import MIN_CALLS, PROBE
from bench.scale import (
    PHASES,
    POLL_SECONDS,
    BurstFigures,
    JobCounts,
    PhaseCpu,
    ScaleResult,
    alternation_table,
    same_work_table,
    until_settled,
    write_window_bound,
)
from tests.postgres import PostgresCluster

JOBS = 3000


class Burst:
    """Jobs settling at ``rate`` a second on a clock that moves only when the wait sleeps."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.now = 0.0
        self.counts = 0

    def unsettled(self) -> int:
        self.counts += 1
        return max(0, math.ceil(JOBS - self.rate * self.now))

    async def sleep(self, seconds: float) -> None:
        self.now += seconds

    @property
    def end(self) -> float:
        return JOBS / self.rate


@pytest.mark.parametrize("rate", [190.0, 120.0, 60.0])
async def test_the_wait_for_the_burst_counts_a_few_times_and_sees_its_end_within_a_poll(
    rate: float,
) -> None:
    """Counting every 0.1 s was 18 % of PostgreSQL's statement time in the 3000-job burst (a
    scan of the job rows each time); jobs cannot settle faster than the platform's windows
    take their writes, so the counts before the end are spaced by how soon it can come."""
    burst = Burst(rate)
    await until_settled(
        burst.unsettled, write_window_bound(), 900, clock=lambda: burst.now, sleep=burst.sleep
    )
    assert burst.end <= burst.now <= burst.end + POLL_SECONDS
    every_poll = burst.end / POLL_SECONDS
    assert burst.counts <= every_poll / 6, f"{burst.counts} counts ({every_poll:.0f} every 0.1 s)"


async def test_the_wait_for_the_burst_gives_up_after_its_timeout() -> None:
    burst = Burst(0.0)
    with pytest.raises(TimeoutError, match="3000 jobs unsettled"):
        await until_settled(
            burst.unsettled, write_window_bound(), 60, clock=lambda: burst.now, sleep=burst.sleep
        )
    assert 60 <= burst.now <= 60 + JOBS / write_window_bound()


def sessions(url: str) -> int:
    """Connections the database has had (PostgreSQL's count, this one included)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_the_counts_share_one_connection(postgres: PostgresCluster) -> None:
    """A connection per count started a PostgreSQL backend each time, charged to the run."""
    url = postgres.create_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE jobs (status TEXT)")
        conn.execute("INSERT INTO jobs VALUES ('posted'), ('finished')")
    before = sessions(url)
    with contextlib.closing(JobCounts(url)) as counts:
        assert [counts.jobs("status <> 'posted'") for _ in range(20)] == [1] * 20
    assert sessions(url) - before <= 2, "one for the counts, one to read the count"


def test_the_burst_is_told_from_the_jump_and_from_its_first_result() -> None:
    burst = BurstFigures.of(100.0, [102.0, 103.0, 104.0, 112.0])

    assert burst.per_second == pytest.approx(4 / 12)
    assert burst.first == pytest.approx(2.0)
    assert burst.then_per_second == pytest.approx(3 / 10)


def test_the_same_work_table_sets_the_cluster_against_what_the_same_code_costs() -> None:
    """The probe cost 1.2 × per run in 3 processes, the callbacks alike 1.5 × per call, the
    cluster 1.8 × in all: being three added 1.5 × on top of the probe's."""
    n = 10 * MIN_CALLS
    results = []
    for processes, probe, alike, other in ((1, 1.0, 1.0, 1.0), (3, 1.2, 1.5, 2.1)):
        result = ScaleResult(processes, JOBS)
        for name in PHASES:
            per_process = (alike + other) / processes
            result.cpu[name] = PhaseCpu(10.0, (per_process,) * processes, 1.0, 1.0)
            result.attributed[name] = {
                "T:parse": (n, alike),
                f"T:asks {processes}": (n, other),
                PROBE: (100, probe),
            }
        results.append(result)

    table = same_work_table(results)

    rows = table.render().splitlines()
    burst = next(row for row in rows if "| burst" in row)
    cells = [cell.strip() for cell in burst.strip("|").split("|")]
    expected = ["1.20", "1", f"{n} / {n}", "1.00", "1.50", "1.50 / 1.50 / 1.50", "1.80", "1.50"]
    assert cells[2:] == expected, cells
    assert "T:parse ×1.50" in table.notes[1]
    assert "burst: T:asks 3 +2.10 (0.00 → 2.10 s, 0 → 3000), T:parse +0.50" in table.notes[2]


def test_the_sizes_in_turn_are_told_by_run_and_as_3_processes_over_1() -> None:
    """Runs of 1, 3, 3 and 1 processes at 10, 13, 12 and 8 ms a job: the means 12.5 ÷ 9, each
    run of 3 against the run of 1 beside it 1.3 and 1.5."""
    runs = []
    for processes, ms in ((1, 10.0), (3, 13.0), (3, 12.0), (1, 8.0)):
        result = ScaleResult(processes, JOBS)
        seconds = ms * JOBS / 1000 / len(PHASES) / processes
        for name in PHASES:
            result.cpu[name] = PhaseCpu(10.0, (seconds,) * processes, 1.0, 1.0)
        runs.append(result)

    table = alternation_table(runs)

    rows = [row for row in table.render().splitlines() if row.startswith("| ") and "run" not in row]
    totals = [[cell.strip() for cell in row.strip("|").split("|")][-2:] for row in rows]
    assert totals == [["10.00", "1.11"], ["13.00", "1.44"], ["12.00", "1.33"], ["8.00", "0.89"]]
    assert "the means: 1.389; each pair (runs 1–2, 3–4): 1.300, 1.500." in table.notes[0]
