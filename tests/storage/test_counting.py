"""The counting database hands each call on as the store made it: a read said not to be
repeatable is not run again on a fresh connection when its own is lost, as in production."""

from __future__ import annotations

import asyncio

import pytest

from storage.postgres.database import ConnectionLost, PostgresDatabase
from tests.postgres import PostgresCluster
from tests.storage.counting import CountingDatabase
from tests.storage.helpers import holding, terminate_table_waiters, until_waiting_for_table


@pytest.mark.parametrize("method", ["fetch_one", "fetch_all"])
async def test_a_read_not_repeatable_is_not_run_again_when_its_connection_is_lost(
    postgres: PostgresCluster, method: str
) -> None:
    url = postgres.create_schema()
    db, other = PostgresDatabase(url, pool_size=1), PostgresDatabase(url, pool_size=1)
    counting = CountingDatabase(db)
    try:
        await db.execute("CREATE TABLE marks (n INTEGER)")
        await db.execute("INSERT INTO marks VALUES (1)")
        async with holding(other, "LOCK TABLE marks IN ACCESS EXCLUSIVE MODE"):
            read = asyncio.create_task(
                getattr(counting, method)("SELECT n FROM marks", repeatable=False)
            )
            await until_waiting_for_table(url, "marks")
            assert await terminate_table_waiters(url, "marks") == 1
        async with asyncio.timeout(10):
            with pytest.raises(ConnectionLost):
                await read
        assert len(counting.trips) == 1
    finally:
        await db.close()
        await other.close()
