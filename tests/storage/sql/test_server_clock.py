"""The database server's clock read in a process: measured when a PostgreSQL store opens (a
host whose wall clock is an hour off still stamps the server's time), moved only by a round
trip whose bounds it falls outside, to the nearer one, and carried between readings by a clock
that counts a suspend (Linux); SQLite keeps this host's clock."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from storage import SqliteStore
from storage.postgres import PostgresStore
from storage.sql.server_clock import ServerClock, since_boot
from storage.sql.session import Database
from tests.postgres import PostgresCluster
from tests.storage.conftest import new_job
from tests.storage.helpers import create_job

HOUR = 3600.0


def stopped_clock(offset: float = 0.0) -> ServerClock:
    """A server clock whose monotonic clock stands at 100 and whose host reads 1000."""
    clock = ServerClock(host=lambda: 1000.0, monotonic=lambda: 100.0)
    if offset:
        clock.observe(1000.0, 1000.0 + offset, 1000.0)
    return clock


def test_until_measured_it_reads_the_hosts_wall_clock() -> None:
    clock = stopped_clock()
    assert (clock(), clock.error) == (1000.0, None)


def test_the_first_round_trip_moves_it_to_the_middle_of_its_bounds() -> None:
    clock = stopped_clock()
    clock.observe(1000.0, 1500.0, 1002.0)
    assert (clock(), clock.error) == (1499.0, 1.0)


def test_a_round_trip_whose_bounds_hold_it_leaves_it_alone() -> None:
    clock = stopped_clock(offset=500.0)
    clock.observe(1499.0, 1500.2, 1501.0)
    assert clock() == 1500.0
    clock.observe(1500.0, 1500.0, 1500.0)
    assert clock() == 1500.0


def test_a_round_trip_whose_bounds_it_falls_outside_moves_it_to_the_nearer_one() -> None:
    clock = stopped_clock(offset=500.0)
    clock.observe(1500.0, 1560.0, 1500.5)
    assert (clock(), clock.error) == (1559.5, 0.5)
    clock.observe(1559.5, 1559.0, 1559.5)
    assert (clock(), clock.error) == (1559.0, 0.0)


def test_a_slow_round_trip_moves_a_clock_barely_off_only_as_far_as_it_proves() -> None:
    """A heartbeat that waited 5 s for its row's lock before the server read its clock: its
    bounds' middle is 2.5 s from the server's time, and a clock 10 ms behind moved there ran
    2.5 s ahead of every other process until the next beat stepped it back."""
    clock = stopped_clock(offset=500.0)
    clock.observe(1500.0, 1505.01, 1505.0)
    assert round(clock() - 1500.0, 6) == 0.01


def test_how_far_it_is_ahead_of_this_hosts_wall_clock_follows_corrections_and_host_steps() -> None:
    host = [1000.0]
    clock = ServerClock(host=lambda: host[0], monotonic=lambda: 100.0)
    assert clock.ahead_of_host() == 0.0
    clock.observe(1000.0, 1500.0, 1000.0)
    assert clock.ahead_of_host() == 500.0
    clock.observe(1500.0, 1440.0, 1500.0)
    assert clock.ahead_of_host() == 440.0
    host[0] = 2000.0
    assert clock.ahead_of_host() == -560.0


def test_a_round_trip_answered_before_it_was_sent_changes_nothing() -> None:
    clock = stopped_clock(offset=500.0)
    clock.observe(1500.0, 9000.0, 1499.0)
    assert clock() == 1500.0


@pytest.mark.skipif(sys.platform != "linux", reason="CLOCK_BOOTTIME is Linux's")
def test_on_linux_it_is_carried_by_a_clock_that_counts_a_suspend() -> None:
    """``time.monotonic`` (CLOCK_MONOTONIC) stands still while a Linux host is suspended: a
    resumed process stamped times behind by the pause (a new job's lease already past) until
    its next heartbeat."""
    assert ServerClock().monotonic is since_boot
    before = time.clock_gettime(time.CLOCK_BOOTTIME)
    assert before <= since_boot() <= time.clock_gettime(time.CLOCK_BOOTTIME)


def test_a_pause_its_monotonic_clock_counts_moves_it_on_by_the_pause_at_once() -> None:
    elapsed = [100.0]
    clock = ServerClock(host=lambda: 1000.0, monotonic=lambda: elapsed[0])
    clock.observe(1000.0, 1500.0, 1000.0)
    elapsed[0] += HOUR
    assert (clock(), clock.error) == (1500.0 + HOUR, 0.0)


async def server_now(db: Database) -> float:
    row = await db.fetch_one("SELECT EXTRACT(EPOCH FROM clock_timestamp()) AS now")
    assert row is not None
    return float(row["now"])


async def test_a_store_on_a_host_an_hour_off_stamps_the_database_servers_time(
    postgres: PostgresCluster,
) -> None:
    url = postgres.create_schema()
    async with await PostgresStore.open(
        url, clock=ServerClock(lambda: time.time() + HOUR)
    ) as store:
        before = await server_now(store.db)
        job = await create_job(store.admission, new_job())
        after = await server_now(store.db)
        assert before - 1 <= job.created_at <= after + 1
        assert job.lease_until is not None and before - 1 <= job.lease_until - 10 <= after + 1


async def test_the_default_clock_is_the_servers_on_postgresql_and_the_hosts_on_sqlite(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    async with await PostgresStore.open(postgres.create_schema()) as store:
        assert isinstance(store.clock, ServerClock) and store.clock.error is not None
    async with await SqliteStore.open(tmp_path / "genbot.db") as single:
        assert single.clock is time.time
