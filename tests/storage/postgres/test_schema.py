"""PostgreSQL schema: the same versions as SQLite, migrations once under the lock however many
processes start together, refusal of newer databases, an index behind every lookup."""

from __future__ import annotations

import psycopg
import pytest

from storage import StorageError
from storage.postgres import PostgresStore, describe_url
from storage.queries import leasing
from storage.sql.dialect import POSTGRES
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


async def test_finding_expired_leases_reads_only_them(url: str) -> None:
    """With thousands of live leases and a few expired, a claim reads the expiry index."""
    async with await PostgresStore.open(url) as store, store.db.connection() as conn:
        await conn.execute(
            "INSERT INTO jobs (id, family, type, status, requester_id, platform, workspace_id,"
            " channel_id, created_at, updated_at, owner, lease_until)"
            " SELECT 'j' || n, 'task', 'imagine', 'processing', 'u', 'discord', 'g', 'c', n, n,"
            " 'alive', CASE WHEN n % 1000 = 0 THEN 1 ELSE 1e12 END"
            " FROM generate_series(1, 5000) AS n"
        )
        await conn.execute("ANALYZE jobs")
        cursor = await conn.execute(
            POSTGRES.statement(f"EXPLAIN {leasing.SQL_EXPIRED.format('?')}"),
            (1000.0, "me", "discord", 100),
        )
        plan = "\n".join(row["QUERY PLAN"] for row in await cursor.fetchall())
    assert "jobs_by_lease_expiry" in plan, plan
