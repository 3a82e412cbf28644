"""The databases made by a released genbot (``tests/storage/fixtures/v11.*.sql``, main ffbfa8e)
open with this code, migrate to its latest schema and read back what was written — the start of
issue 23's upgrade-in-place test, which will open them with the new storage layer and compare
every row."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from storage import LATEST_VERSION, ConversationKey, SqliteStore, Storage
from storage.postgres import PostgresStore
from tests.postgres import PostgresCluster
from tests.storage.conftest import ManualClock

FIXTURES = Path(__file__).parent / "fixtures"


def load_sqlite(dump: Path, path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(dump.read_text())
    finally:
        conn.close()


def load_postgres(dump: Path, url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(dump.read_text().encode())


@pytest.fixture(params=["sqlite", "postgres"])
async def released(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    """Today's store on a database loaded from the ffbfa8e dump of each backend."""
    clock = ManualClock()
    if request.param == "sqlite":
        path = tmp_path / "genbot.db"
        load_sqlite(FIXTURES / "v11.sqlite.sql", path)
        return await SqliteStore.open(path, clock=clock)
    cluster: PostgresCluster = request.getfixturevalue("postgres")
    url = cluster.create_database()
    load_postgres(FIXTURES / "v11.postgres.sql", url)
    return await PostgresStore.open(url, clock=clock, pool_size=2)


async def test_a_released_database_reads_back_what_was_written(released: Storage) -> None:
    store = released
    try:
        assert await store.schema_version() == LATEST_VERSION > 11
        grid = await store.job_for_message("discord", "c1", "901")
        assert grid is not None and grid.status == "posted" and grid.credits == 8
        assert grid.result == {"pressed": ["upscale1"]}
        assert grid.result_urls == ["https://img.example/1.png"]
        dm = await store.find_conversation(ConversationKey("discord", "@dm", "d1", ""))
        assert dm is not None and (dm.model, dm.system_prompt) == ("llm-4", "be brief")
        turns = await store.conversation_tail(dm.id, max_tokens=10_000)
        assert [t.role for t in turns] == ["user", "assistant", "function"]
        assert turns[0].content == "hello there"
        mine = await store.get_scope_settings("user", "discord", "u1")
        assert mine is not None and (mine.model, mine.temperature) == ("llm-4", 0.3)
        assert not await store.remember_event("slack", "Ev01")
        assert await store.consume_oauth_state("state-1")
        installed = await store.find_slack_installation("", "T1")
        assert installed is not None and installed.data["bot_token"] == "xoxb-1"
        messages, images = await store.load_playground(keep=500)
        assert [m.id for m in messages] == ["p1", "p2"] and [i.key for i in images] == ["k1"]
    finally:
        await store.close()
