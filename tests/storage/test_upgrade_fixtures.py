"""Databases made by released genbots (``tests/storage/fixtures/v*.sql``: v11 by main ffbfa8e,
v12 by main 3fb4599, v15 by main bbc407b, v26 by main 4e62e46; one per backend, rows in every
table written through the storage API of their day) upgrade in place with this code: the schema
ends up as a fresh database's, every row of the dump is still there unchanged, and the ports read
back what was written."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from storage import (
    LATEST_VERSION,
    ConversationKey,
    FeedbackCount,
    JobQuota,
    JobSearch,
    ModerationRule,
    NewJob,
    SavedOption,
    SqliteStore,
    Store,
)
from storage.postgres import PostgresStore
from storage.postgres.database import PostgresDatabase
from storage.sql.session import Database
from storage.sqlite.database import SqliteDatabase
from tests.postgres import PostgresCluster
from tests.storage.conftest import ManualClock

FIXTURES = Path(__file__).parent / "fixtures"
DUMPS = sorted(int(path.name.split(".")[0][1:]) for path in FIXTURES.glob("v*.sqlite.sql"))
SQLITE_SHAPE = (
    "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
    " ORDER BY type, name"
)
POSTGRES_SHAPE = (
    "SELECT table_name, column_name, data_type, is_nullable, column_default, collation_name,"
    " is_identity, identity_generation FROM information_schema.columns"
    " WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position",
    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
    " ORDER BY indexname",
    "SELECT conrelid::regclass::text AS on_table, conname, pg_get_constraintdef(oid) AS def"
    " FROM pg_constraint WHERE connamespace = current_schema()::regnamespace ORDER BY conname",
)


class Backend:
    """Loads dumps into databases of one backend and opens them (raw, or as this code's store)."""

    def __init__(self, name: str, tmp_path: Path, cluster: PostgresCluster | None) -> None:
        self.name, self._tmp, self._cluster, self._made = name, tmp_path, cluster, 0

    def load(self, dump: Path | None) -> str:
        """A new database with ``dump`` in it (None: empty); its path or URL."""
        self._made += 1
        if self._cluster is None:
            path = self._tmp / f"{self._made}.db"
            with sqlite3.connect(path) as file:
                file.executescript(dump.read_text() if dump else "")
            file.close()
            return str(path)
        url = self._cluster.create_database()
        if dump is not None:
            with psycopg.connect(url, autocommit=True) as server:
                server.execute(dump.read_text().encode())
        return url

    async def store(self, where: str) -> Store:
        if self._cluster is None:
            return await SqliteStore.open(where, clock=ManualClock())
        return await PostgresStore.open(where, clock=ManualClock(), pool_size=2)

    @asynccontextmanager
    async def raw(self, where: str) -> AsyncIterator[Database]:
        """The database as it is (nothing migrated)."""
        db: Database
        db = (
            await SqliteDatabase.open(Path(where))
            if self._cluster is None
            else (PostgresDatabase(where, pool_size=1))
        )
        try:
            yield db
        finally:
            await db.close()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    cluster = request.getfixturevalue("postgres") if request.param == "postgres" else None
    return Backend(request.param, tmp_path, cluster)


def _normal(sql: str | None) -> str | None:
    """SQLite's text of a table or index, its quoting and layout aside."""
    if sql is None:
        return None
    flat = re.sub(r"\s+", " ", sql.replace('"', "")).strip().rstrip(";")
    return re.sub(r"\s*([(),])\s*", r"\1", flat)


async def shape(db: Database) -> list[Any]:
    """Tables, columns (types, defaults, nullability, collation, keys) and indexes."""
    if db.dialect.name == "sqlite":
        rows = await db.fetch_all(SQLITE_SHAPE)
        return [(row["type"], row["name"], _normal(row["sql"])) for row in rows]
    return [await db.fetch_all(query) for query in POSTGRES_SHAPE]


async def columns_of(db: Database) -> dict[str, list[str]]:
    """Every table's columns, in order."""
    if db.dialect.name == "sqlite":
        query = (
            "SELECT m.name AS t, c.name AS c FROM sqlite_master AS m,"
            " pragma_table_info(m.name) AS c WHERE m.type = 'table'"
            " AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, c.cid"
        )
    else:
        query = (
            "SELECT table_name AS t, column_name AS c FROM information_schema.columns"
            " WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
        )
    tables: dict[str, list[str]] = {}
    for row in await db.fetch_all(query):
        tables.setdefault(row["t"], []).append(row["c"])
    return tables


async def rows_of(db: Database, table: str, columns: list[str]) -> list[tuple[Any, ...]]:
    found = await db.fetch_all(f"SELECT {', '.join(columns)} FROM {table}")
    return sorted((tuple(row.values()) for row in found), key=repr)


@pytest.mark.parametrize("version", DUMPS)
async def test_a_released_database_upgrades_in_place_without_losing_a_row(
    backend: Backend, version: int
) -> None:
    dump = FIXTURES / f"v{version}.{backend.name}.sql"
    before, upgraded = backend.load(dump), backend.load(dump)
    store, fresh = await backend.store(upgraded), await backend.store(backend.load(None))
    try:
        assert await store.schema_version() == LATEST_VERSION >= version
        assert await shape(store.db) == await shape(fresh.db)
        async with backend.raw(before) as old:
            assert await old.fetch_one("SELECT MAX(version) AS v FROM schema_version") == {
                "v": version
            }
            filled = 0
            for table, columns in (await columns_of(old)).items():
                rows, kept = (
                    await rows_of(old, table, columns),
                    await rows_of(store.db, table, columns),
                )
                filled += bool(rows)
                if table == "schema_version":
                    assert set(rows) <= set(kept) and len(kept) == LATEST_VERSION
                else:
                    assert kept == rows, table
            assert filled >= 15  # all but write_slots on SQLite, storage_probes from v12
        await reads_back(store, version)
    finally:
        await store.close()
        await fresh.close()


async def reads_back(store: Store, version: int) -> None:
    """What the fixtures' ``fill`` wrote, read through the ports."""
    grid = await store.message_links.job_for_message("discord", "c1", "901")
    assert grid is not None and grid.status == "posted" and grid.credits == 8
    assert grid.result == {"pressed": ["upscale1"]}
    assert grid.result_urls == ["https://img.example/1.png"]
    dm = await store.conversations.find_conversation(ConversationKey("discord", "@dm", "d1", ""))
    assert dm is not None and (dm.model, dm.system_prompt) == ("llm-4", "be brief")
    turns = await store.conversations.conversation_tail(dm.id, max_tokens=10_000)
    assert [t.role for t in turns] == ["user", "assistant", "function"]
    assert turns[0].content == "hello there"
    assert [t.author for t in turns] == ["u1", None, None], "a DM's turns are its user's"
    mine = await store.settings.get_scope_settings("user", "discord", "u1")
    assert mine is not None and (mine.model, mine.temperature) == ("llm-4", 0.3)
    assert not await store.dedupe.remember_event("slack", "Ev01")
    assert await store.installations.consume_oauth_state("state-1")
    installed = await store.installations.find_slack_installation("", "T1")
    assert installed is not None and installed.data["bot_token"] == "xoxb-1"
    messages, images = await store.playground.load_playground(keep=500)
    assert [m.id for m in messages] == ["p1", "p2"] and [i.key for i in images] == ["k1"]
    if version < 14:
        return
    assert [m.version for m in messages] == [2, 1] and messages[1].pending
    again = NewJob(family="task", type="imagine", requester_id="u2", platform="discord",
                   channel_id="c1", workspace_id="g1", prompt="an owl",
                   command_key="discord:555")  # fmt: skip
    found = await store.admission.create_job_within(again, JobQuota())
    assert isinstance(found, tuple) and not found[1]
    keyed = found[0]
    assert (keyed.prompt, keyed.status, keyed.lease_generation) == ("an owl", "creating", 1)
    if version < 26:
        return
    assert await store.moderation.rules("discord", "g1") == [ModerationRule("violence", "gore")]
    [entry] = await store.audit.entries("discord", "g1")
    assert (entry.kind, entry.target, entry.after) == ("moderation.rule_added", "gore",
                                                       {"category": "violence"})  # fmt: skip
    heron = await store.archive.search(JobSearch(platform="discord", requester_id="u4",
                                                 workspace_id=None), 5)  # fmt: skip
    assert heron == []  # still creating: the archive holds posted jobs
    assert await store.media.serve("m1.png") == ("image/png", b"\x89PNG m1")
    assert await store.feedback.counts("discord", "g1") == [FeedbackCount("llm-4", 1, 0)]
    talk = await store.conversations.find_conversation(ConversationKey("discord", "g1", "c2", "t9"))
    assert talk is not None
    [fork] = await store.branches.forks(talk.id)
    assert (len(fork.first_turns), fork.live) == (2, 2)
    live = await store.conversations.conversation_tail(talk.id, max_tokens=10_000)
    assert [t.content for t in live] == ["a harder riddle?"]
    answer = await store.conversations.get_turn(talk.id, fork.first_turns[0] + 1)
    assert answer is not None and (answer.state, answer.model, answer.asked_by) == (
        "stopped",
        "llm-4",
        "u5",
    )
    asked, edited = [await store.conversations.get_turn(talk.id, t) for t in fork.first_turns]
    assert asked is not None and asked.author == "u5", "the turn its answer was for"
    assert edited is not None and edited.author == "u5", "an edit is the edited turn's author's"
    options = await store.preferences.options("discord", "u1", "c1")
    assert options == [SavedOption("fox", "a fox --ar 16:9")]
    batch = await store.preferences.batch("b1")
    assert batch is not None and (batch.outcome, batch.started, batch.command) == (
        "run",
        1,
        {"prompts": ["a", "b"]},
    )
    assert await store.channels_in_view.find_channel_in_view("T1", "U1", 3600) == "C1"
