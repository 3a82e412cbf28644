"""Fixtures for the storage tests: a settable clock, and stores on real databases.

``store`` is a fresh database of each backend (SQLite; PostgreSQL in the session's throwaway
cluster, skipped where it cannot start); ``other_store`` opens the same database again, as a
second genbot process would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from storage import NewJob, SqliteStore, Store
from storage.postgres import PostgresStore
from storage.postgres.database import PostgresDatabase
from storage.sqlite.database import SqliteDatabase
from tests.postgres import PostgresCluster

START = datetime(2024, 3, 1, 12, 0, tzinfo=UTC).timestamp()


class ManualClock:
    """A clock the test moves by hand (read on the store's worker thread)."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class SqliteFile:
    """One SQLite file; every :meth:`open` is another connection to it (:meth:`connect`:
    without migrating)."""

    path: Path
    name = "sqlite"

    async def open(self, clock: ManualClock) -> Store:
        return await SqliteStore.open(self.path, clock=clock)

    async def connect(self) -> SqliteDatabase:
        return await SqliteDatabase.open(self.path)


@dataclass
class PostgresSchema:
    """One PostgreSQL schema of its own; every :meth:`open` is another pool on it
    (:meth:`connect`: without migrating)."""

    url: str
    name = "postgres"

    async def open(self, clock: ManualClock) -> Store:
        return await PostgresStore.open(self.url, clock=clock, pool_size=4)

    async def connect(self) -> PostgresDatabase:
        return PostgresDatabase(self.url, pool_size=2)


Database = SqliteFile | PostgresSchema


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "genbot.db"


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, db_path: Path) -> Database:
    """An empty database of each backend."""
    if request.param == "sqlite":
        return SqliteFile(db_path)
    cluster: PostgresCluster = request.getfixturevalue("postgres")
    return PostgresSchema(cluster.create_schema())


@pytest.fixture
async def store(database: Database, clock: ManualClock) -> AsyncIterator[Store]:
    opened = await database.open(clock)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def other_store(database: Database, clock: ManualClock, store: Store) -> AsyncIterator[Store]:
    """The same database opened a second time (another process)."""
    opened = await database.open(clock)
    try:
        yield opened
    finally:
        await opened.close()


def new_job(**overrides: object) -> NewJob:
    """An imagine job by user ``u1`` in ``discord``/``c1`` unless overridden."""
    fields: dict[str, object] = {
        "family": "task",
        "type": "imagine",
        "requester_id": "u1",
        "platform": "discord",
        "workspace_id": "g1",
        "channel_id": "c1",
        "prompt": "a fox --v 6",
    }
    fields.update(overrides)
    return NewJob(**fields)  # type: ignore[arg-type]
