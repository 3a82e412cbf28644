"""genbot's PostgreSQL database on the wire: what a transaction costs in round trips."""

from __future__ import annotations

import pytest

from storage.postgres.database import PostgresDatabase
from storage.sql.session import Session
from tests.postgres import PostgresCluster
from tests.storage.postgres.wire import wire


async def two_steps(tx: Session) -> None:
    await tx.execute("INSERT INTO steps VALUES (?)", (1,))
    await tx.execute_each("INSERT INTO steps VALUES (?)", [(2,), (3,)])


async def test_a_transaction_sends_its_begin_with_its_first_statements(
    postgres: PostgresCluster,
) -> None:
    """psycopg's ``transaction()`` sends ``BEGIN`` alone: a round trip of its own in every
    transaction (each claim, save, move and reservation of a burst's delivery)."""
    async with wire(postgres) as relay:
        db = PostgresDatabase(relay.url("genbot"), pool_size=1)
        try:
            await db.execute("CREATE TEMPORARY TABLE steps (n INTEGER)")
            relay.trips = 0
            await db.transaction(two_steps)
            assert relay.trips == 3, "BEGIN and the insert, the two inserts, COMMIT"
            relay.trips = 0

            async def nothing(tx: Session) -> None:
                return None

            await db.transaction(nothing)
            assert relay.trips == 0, "no statement, no BEGIN or COMMIT"
            rows = await db.fetch_all("SELECT n FROM steps ORDER BY n")
            assert [row["n"] for row in rows] == [1, 2, 3]
        finally:
            await db.close()


async def test_a_transaction_that_raises_is_rolled_back_and_its_connection_reused(
    postgres: PostgresCluster,
) -> None:
    async with wire(postgres) as relay:
        db = PostgresDatabase(relay.url("genbot"), pool_size=1)
        try:
            await db.execute("CREATE TEMPORARY TABLE steps (n INTEGER)")

            async def fails(tx: Session) -> None:
                await two_steps(tx)
                raise LookupError("no room")

            with pytest.raises(LookupError):
                await db.transaction(fails)
            rows = await db.fetch_all("SELECT n FROM steps")
            assert rows == [], "rolled back, and the temporary table is still there"
        finally:
            await db.close()
