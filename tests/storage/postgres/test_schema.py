"""PostgreSQL schema: the same versions as SQLite, migrations once under the lock however many
processes start together, refusal of newer databases, an index behind every lookup."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from psycopg.rows import dict_row

from storage import StorageError
from storage.postgres import LATEST_VERSION, MIGRATIONS, PostgresStore, describe_url
from storage.postgres.schema import migrate
from storage.queries import leasing
from storage.sql.dialect import POSTGRES
from storage.sqlite import MIGRATIONS as SQLITE_MIGRATIONS
from tests.postgres import PostgresCluster


@pytest.fixture
def url(postgres: PostgresCluster) -> str:
    return postgres.create_schema()


def test_both_backends_have_the_same_schema_versions() -> None:
    assert [(m.version, m.name) for m in MIGRATIONS] == [
        (m.version, m.name) for m in SQLITE_MIGRATIONS
    ]


async def test_ten_processes_starting_at_once_migrate_an_empty_database_once(url: str) -> None:
    async with asyncio.timeout(60):
        stores = await asyncio.gather(*(PostgresStore.open(url, pool_size=1) for _ in range(10)))
    try:
        assert {await store.schema_version() for store in stores} == {LATEST_VERSION}
        async with stores[0].connection() as conn:
            cursor = await conn.execute("SELECT version FROM schema_version ORDER BY version")
            versions = [row["version"] for row in await cursor.fetchall()]
        assert versions == list(range(1, LATEST_VERSION + 1))
    finally:
        await asyncio.gather(*(store.close() for store in stores))


async def test_is_dm_moves_from_the_parameters_of_old_jobs_to_its_column(url: str) -> None:
    async with await psycopg.AsyncConnection.connect(
        url, autocommit=True, row_factory=dict_row
    ) as conn:
        await migrate(conn, target=10)
        for job_id, parameters in [
            ("dm", '{"is_dm": true, "aspect_ratio": "1:1"}'),
            ("channel", '{"aspect_ratio": "1:1"}'),
            ("said-no", '{"is_dm": false}'),
        ]:
            await conn.execute(
                "INSERT INTO jobs (id, family, type, status, requester_id, platform,"
                " workspace_id, channel_id, parameters, created_at, updated_at)"
                " VALUES (%s, 'task', 'imagine', 'posted', 'u1', 'slack', 'T1', 'D1', %s, 1, 1)",
                (job_id, parameters),
            )
    async with await PostgresStore.open(url) as store:
        jobs = [await store.get_job(job_id) for job_id in ("dm", "channel", "said-no")]
    assert [(job.is_dm, job.parameters) for job in jobs if job is not None] == [
        (True, {"aspect_ratio": "1:1"}),
        (False, {"aspect_ratio": "1:1"}),
        (False, {}),
    ]


async def test_a_database_newer_than_the_code_is_refused(url: str) -> None:
    async with await PostgresStore.open(url) as store, store.connection() as conn:
        await conn.execute("INSERT INTO schema_version VALUES (99, 'from the future', 0)")
    with pytest.raises(StorageError, match="schema version 99 is newer"):
        await PostgresStore.open(url)


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
    async with await PostgresStore.open(url) as store, store.connection() as conn:
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
