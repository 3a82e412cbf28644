"""The PostgreSQL connection pool: bounded, cancel-safe, and it drops connections it cannot
trust."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from storage import StorageError
from storage.postgres import PostgresStore
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


async def test_a_connection_the_server_dropped_is_replaced(url: str) -> None:
    async with await PostgresStore.open(url, pool_size=1) as store:
        async with store.connection() as conn:
            cursor = await conn.execute("SELECT pg_backend_pid() AS pid")
            row = await cursor.fetchone()
            assert row is not None
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (row["pid"],))
        with pytest.raises(StorageError, match="database error"):
            await store.get_job("any")
        assert await store.get_job("any") is None


async def test_a_connection_left_inside_a_transaction_is_not_reused(url: str) -> None:
    pool = ConnectionPool(url, 1, timeout=10, connect_timeout=10)
    async with pool.connection() as conn:
        await conn.execute("BEGIN")
        first = conn
    async with pool.connection() as conn:
        assert conn is not first
        assert first.closed
    await pool.close()
