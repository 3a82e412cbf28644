"""PostgreSQL schema: the same versions as SQLite, migrations once under the lock however many
processes start together, refusal of newer databases, an index behind every lookup."""

from __future__ import annotations

import psycopg
import pytest

from storage import StorageError
from storage.postgres import PostgresStore, describe_url
from storage.queries import leasing
from storage.sql.dialect import POSTGRES
from storage.sql.server_clock import SAMPLES, ServerClock
from storage.sql.session import Database
from tests.postgres import PostgresCluster


@pytest.fixture
def url(postgres: PostgresCluster) -> str:
    return postgres.create_schema()


async def test_an_unreachable_server_is_one_line_without_the_password(
    postgres: PostgresCluster,
) -> None:
    url = f"postgresql://genbot:hunter2-never-print@/nowhere?host={postgres.socket_dir}"
    with pytest.raises(StorageError) as raised:
        await PostgresStore.open(url)
    message = str(raised.value)
    assert message.startswith(f"cannot open the database at {describe_url(url)}: ")
    assert "nowhere" in message and "hunter2" not in message and "\n" not in message


class UnreadableClock(ServerClock):
    """A server clock whose measuring statement the server refuses."""

    async def measure(self, db: Database, samples: int = SAMPLES) -> None:
        await db.fetch_one("SELECT no_such_clock()")


async def test_a_clock_that_cannot_be_measured_at_open_is_one_line_like_a_migration(
    url: str,
) -> None:
    """The first measurement of the server's clock failed with a bare "database error: …"."""
    with pytest.raises(StorageError) as raised:
        await PostgresStore.open(url, clock=UnreadableClock())
    message = str(raised.value)
    assert message.startswith(f"cannot open the database at {describe_url(url)}: ")
    assert "no_such_clock" in message and "database error" not in message


def test_a_url_is_described_without_credentials() -> None:
    assert describe_url("postgresql://bot:s3cret@db.example:6543/genbot") == (
        "db.example:6543/genbot"
    )
    assert describe_url("postgresql://bot@localhost/genbot") == "localhost:5432/genbot"


async def test_the_migration_lock_is_released_after_start(url: str) -> None:
    async with await PostgresStore.open(url):
        with psycopg.connect(url, autocommit=True) as conn:
            held = conn.execute("SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory'")
            assert held.fetchone() == (0,)


async def test_finding_the_jobs_of_gone_processes_reads_only_them(url: str) -> None:
    """With thousands of jobs of a live process (their own leases long run out: its lease
    holds them) and a few of a gone one, a claim reads the owner index, once per owner for
    the owners and then the gone owner's jobs."""
    async with await PostgresStore.open(url) as store, store.db.connection() as conn:
        await conn.execute(
            "INSERT INTO jobs (id, family, type, status, requester_id, platform, workspace_id,"
            " channel_id, created_at, updated_at, owner, lease_until)"
            " SELECT 'j' || n, 'task', 'imagine', 'processing', 'u', 'discord', 'g', 'c', n, n,"
            " CASE WHEN n % 1000 = 0 THEN 'gone' ELSE 'alive' END, 1"
            " FROM generate_series(1, 5000) AS n"
        )
        await conn.execute(
            "INSERT INTO processes (id, host, pid, started_at, seen_at, lease_until)"
            " VALUES ('alive', 'h', 1, 0, 1e12, 1e12)"
        )
        await conn.execute("ANALYZE jobs")

        async def plan(sql: str, values: tuple[object, ...]) -> str:
            cursor = await conn.execute(POSTGRES.statement(f"EXPLAIN {sql}"), values)
            return "\n".join(row["QUERY PLAN"] for row in await cursor.fetchall())

        owners = await plan(leasing.SQL_GONE_OWNERS, ("me", 1000.0))
        jobs = await plan(
            leasing.SQL_EXPIRED.format(" OR owner IN (?)", "?"), (1000.0, "gone", "discord", 100)
        )
        cursor = await conn.execute(POSTGRES.statement(leasing.SQL_GONE_OWNERS), ("me", 1000.0))
        assert [row["id"] for row in await cursor.fetchall()] == ["gone"]
    for found in (owners, jobs):
        assert "jobs_unfinished_by_owner" in found and "Seq Scan on jobs" not in found, found
