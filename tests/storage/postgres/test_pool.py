"""The PostgreSQL connection pool: bounded, cancel-safe, and it drops connections it cannot
trust."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from storage import StorageError
from storage.postgres import PostgresStore
from storage.postgres.database import ConnectionLost
from storage.postgres.pool import ConnectionPool, PoolTimeout
from tests.postgres import PostgresCluster


@pytest.fixture
def url(postgres: PostgresCluster) -> str:
    return postgres.url("genbot")


async def test_a_cancelled_waiter_stays_cancelled_when_a_connection_frees_at_once(url: str) -> None:
    pool = ConnectionPool(url, 1, timeout=10, connect_timeout=10)
    holding = asyncio.Event()
    release = asyncio.Event()

    async def hold() -> None:
        async with pool.connection():
            holding.set()
            await release.wait()

    async def borrow() -> str:
        async with pool.connection() as conn:
            await conn.execute("SELECT 1")
        return "got one"

    holder = asyncio.create_task(hold())
    await holding.wait()
    waiter = asyncio.create_task(borrow())
    await asyncio.sleep(0.05)
    release.set()
    await asyncio.sleep(0)
    assert holder.done()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert await borrow() == "got one"
    await pool.close()


async def test_at_most_size_connections_are_in_use(url: str) -> None:
    pool = ConnectionPool(url, 2, timeout=10, connect_timeout=10)
    in_use = peak = 0

    async def borrow() -> None:
        nonlocal in_use, peak
        async with pool.connection() as conn:
            in_use += 1
            peak = max(peak, in_use)
            await conn.execute("SELECT pg_sleep(0.02)")
            in_use -= 1

    await asyncio.gather(*(borrow() for _ in range(8)))
    assert peak == 2
    await pool.close()


async def test_waiting_for_a_connection_is_bounded(url: str) -> None:
    pool = ConnectionPool(url, 1, timeout=0.1, connect_timeout=10)
    async with pool.connection():
        with pytest.raises(PoolTimeout):
            async with pool.connection():
                pass
    await pool.close()


async def test_an_idle_connection_the_server_dropped_is_not_lent_again(url: str) -> None:
    pool = ConnectionPool(url, 1, timeout=10, connect_timeout=10)
    async with pool.connection() as conn:
        first = conn
        cursor = await conn.execute("SELECT pg_backend_pid() AS pid")
        row = await cursor.fetchone()
        assert row is not None
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (row["pid"],))
    await asyncio.sleep(0.1)
    async with pool.connection() as conn:
        assert conn is not first
        await conn.execute("SELECT 1")
    await pool.close()


async def test_a_read_whose_connection_is_lost_runs_again_on_a_fresh_one(url: str) -> None:
    async with await PostgresStore.open(url, pool_size=2) as store:
        read = asyncio.create_task(store.db.fetch_one("SELECT pg_sleep(0.5), 7 AS seven"))
        await asyncio.sleep(0.2)
        with psycopg.connect(url, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE query LIKE 'SELECT pg_sleep(0.5)%'"
            ).fetchone()
        assert killed == (1,)
        row = await read
        assert row is not None and row["seven"] == 7


async def test_a_write_that_must_not_run_twice_is_not_repeated(url: str) -> None:
    async with await PostgresStore.open(url, pool_size=2) as store:
        write = asyncio.create_task(store.db.execute("SELECT pg_sleep(0.5), 'once'"))
        await asyncio.sleep(0.2)
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE query LIKE 'SELECT pg_sleep(0.5), ''once''%'"
            )
        with pytest.raises(ConnectionLost):
            await write


async def test_a_statement_past_the_statement_timeout_is_cancelled(url: str) -> None:
    async with await PostgresStore.open(url, pool_size=1, statement_timeout=0.2) as store:
        with pytest.raises(StorageError, match="statement timeout"):
            await store.db.fetch_one("SELECT pg_sleep(2)")
        assert await store.jobs.get_job("any") is None


async def test_the_statement_timeout_keeps_the_urls_own_options(
    postgres: PostgresCluster,
) -> None:
    url = postgres.create_schema()
    async with await PostgresStore.open(url, pool_size=1, statement_timeout=5) as store:
        row = await store.db.fetch_one("SELECT current_setting('statement_timeout') AS t")
        path = await store.db.fetch_one("SELECT current_setting('search_path') AS p")
    assert row is not None and row["t"] == "5s"
    assert path is not None and path["p"].startswith("test_")


async def test_a_connection_left_inside_a_transaction_is_not_reused(url: str) -> None:
    pool = ConnectionPool(url, 1, timeout=10, connect_timeout=10)
    async with pool.connection() as conn:
        await conn.execute("BEGIN")
        first = conn
    async with pool.connection() as conn:
        assert conn is not first
        assert first.closed
    await pool.close()
