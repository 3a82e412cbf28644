"""Schema: migrations from empty and from version 1, pragmas, refusal of newer databases,
an index behind every lookup, and durability across close/reopen."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from storage import (
    LATEST_VERSION,
    ConversationKey,
    SettingValues,
    SqliteStore,
)
from tests.storage.conftest import ManualClock, new_job
from tests.storage.helpers import conversation_history, create_job

# The schema of version 1 exactly as released, frozen here: an upgrade must work on real old files.
V1_SCHEMA = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
    applied_at REAL NOT NULL);
INSERT INTO schema_version VALUES (1, 'conversations, messages, jobs, message links', 0);
CREATE TABLE conversations (id INTEGER PRIMARY KEY, platform TEXT NOT NULL,
    workspace_id TEXT NOT NULL, channel_id TEXT NOT NULL, thread_key TEXT NOT NULL,
    kind TEXT NOT NULL, created_by TEXT, model TEXT, system_prompt TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE UNIQUE INDEX conversations_by_key
    ON conversations (platform, workspace_id, channel_id, thread_key);
CREATE TABLE messages (id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role TEXT NOT NULL, content TEXT, parts TEXT, function_call TEXT, name TEXT,
    token_count INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL);
CREATE INDEX messages_by_conversation ON messages (conversation_id, id);
CREATE TABLE conversation_links (id INTEGER PRIMARY KEY, platform TEXT NOT NULL,
    channel_id TEXT NOT NULL, message_id TEXT NOT NULL,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    chat_message_id INTEGER REFERENCES messages(id) ON DELETE SET NULL);
CREATE UNIQUE INDEX conversation_links_by_message_id
    ON conversation_links (platform, channel_id, message_id);
CREATE INDEX conversation_links_by_conversation ON conversation_links (conversation_id);
CREATE INDEX conversation_links_by_turn ON conversation_links (chat_message_id);
CREATE TABLE jobs (id TEXT PRIMARY KEY, family TEXT NOT NULL, type TEXT NOT NULL,
    status TEXT NOT NULL, provider_id TEXT, parent_job_id TEXT REFERENCES jobs(id),
    action TEXT, requester_id TEXT NOT NULL, platform TEXT NOT NULL,
    workspace_id TEXT NOT NULL, channel_id TEXT NOT NULL, thread_id TEXT,
    progress_message_id TEXT, result_message_id TEXT, prompt TEXT NOT NULL DEFAULT '',
    parameters TEXT NOT NULL DEFAULT '{}', result_urls TEXT NOT NULL DEFAULT '[]',
    actions TEXT NOT NULL DEFAULT '[]', result TEXT NOT NULL DEFAULT '{}', error TEXT,
    webhook_secret TEXT, credits INTEGER, created_at REAL NOT NULL, updated_at REAL NOT NULL,
    finished_at REAL, last_polled_at REAL, last_webhook_at REAL);
CREATE UNIQUE INDEX jobs_by_provider ON jobs (provider_id, family);
CREATE UNIQUE INDEX jobs_by_parent_action ON jobs (parent_job_id, action);
CREATE INDEX jobs_by_status ON jobs (status, created_at);
CREATE INDEX jobs_by_requester_status ON jobs (platform, requester_id, status);
CREATE TABLE job_messages (id INTEGER PRIMARY KEY, platform TEXT NOT NULL,
    channel_id TEXT NOT NULL, message_id TEXT NOT NULL,
    job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE, kind TEXT NOT NULL);
CREATE UNIQUE INDEX job_messages_by_message_id ON job_messages (platform, channel_id, message_id);
CREATE INDEX job_messages_by_job ON job_messages (job_id);
INSERT INTO jobs (id, family, type, status, provider_id, requester_id, platform, workspace_id,
    channel_id, prompt, parameters, result_urls, actions, created_at, updated_at)
    VALUES ('oldjob', 'task', 'imagine', 'processing', 'task-uuid-1', 'u1', 'discord', 'g1',
    'c1', 'an old fox', '{"aspect_ratio":"16:9"}', '[]', '[]', 100.0, 100.0);
INSERT INTO job_messages (platform, channel_id, message_id, job_id, kind)
    VALUES ('discord', 'c1', 'm-progress', 'oldjob', 'progress');
INSERT INTO conversations (platform, workspace_id, channel_id, thread_key, kind, created_at,
    updated_at) VALUES ('slack', 'T1', 'C1', '1700000000.000100', 'thread', 100.0, 100.0);
INSERT INTO messages (conversation_id, role, content, token_count, created_at)
    VALUES (1, 'user', 'hello from v1', 4, 100.0);
"""


def sync_query(path: Path, sql: str, parameters: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Read with an independent connection, as another process would."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, parameters).fetchall()
    finally:
        conn.close()


async def test_wal_normal_sync_busy_timeout_and_foreign_keys(
    db_path: Path, store: SqliteStore
) -> None:
    def pragmas(db: Database) -> tuple[Any, ...]:
        return tuple(
            db.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys")
        )

    assert await store.db.run(pragmas) == ("wal", 1, 5000, 1)
    assert sync_query(db_path, "PRAGMA journal_mode") == [("wal",)]


async def test_a_version_1_database_is_upgraded_and_keeps_its_rows(
    db_path: Path, clock: ManualClock
) -> None:
    conn = sqlite3.connect(db_path)
    conn.executescript(V1_SCHEMA)
    conn.close()

    store = await SqliteStore.open(db_path, clock=clock)
    try:
        assert await store.schema_version() == LATEST_VERSION
        old = await store.message_links.job_for_message("discord", "c1", "m-progress")
        assert old is not None
        assert (old.id, old.status, old.parameters) == (
            "oldjob",
            "processing",
            {"aspect_ratio": "16:9"},
        )
        assert old.next_poll_at is None
        assert [job.id for job in await store.tracking.list_unfinished_jobs()] == ["oldjob"]
        assert await store.jobs.transition("oldjob", "processing", "finished", next_poll_at=5.0)
        conversation = await store.conversations.find_conversation(
            ConversationKey("slack", "T1", "C1", "1700000000.000100")
        )
        assert conversation is not None
        history = await conversation_history(store.conversations, conversation.id)
        assert [m.content for m in history] == ["hello from v1"]
        await store.settings.set_scope_settings("channel", "slack", "C1", model="llm-4")
        assert await store.dedupe.remember_event("slack", "Ev1")
        assert await store.ledger.add_usage("slack", "U1", credits=2)
    finally:
        await store.close()
    assert sync_query(db_path, "SELECT MAX(version) FROM schema_version") == [(LATEST_VERSION,)]


async def test_writes_are_committed_when_the_call_returns(
    db_path: Path, store: SqliteStore
) -> None:
    job = await create_job(store.admission, new_job())
    assert sync_query(db_path, "SELECT status FROM jobs WHERE id = ?", (job.id,)) == [("creating",)]
    assert await store.jobs.transition(job.id, "creating", "submitted", provider_id="p-1")
    assert sync_query(db_path, "SELECT status, provider_id FROM jobs") == [("submitted", "p-1")]


async def test_everything_survives_close_and_reopen(db_path: Path, clock: ManualClock) -> None:
    store = await SqliteStore.open(db_path, clock=clock)
    job = await create_job(store.admission, new_job(webhook_secret="s3cret"))
    await store.message_links.link_message("discord", "c1", "m1", job.id, "progress")
    conversation, _ = await store.conversations.get_or_create_conversation(
        ConversationKey("discord", "g1", "dm-7"), kind="dm", created_by="u1"
    )
    await store.conversations.append_message(
        conversation.id, "user", "remember me", platform_message_ids=["m9"]
    )
    await store.settings.set_scope_settings("user", "discord", "u1", temperature=0.3)
    await store.ledger.add_usage("discord", "u1", tokens_prompt=10, tokens_completion=5)
    assert await store.dedupe.remember_event("discord", "interaction-1")
    await store.close()

    reopened = await SqliteStore.open(db_path, clock=clock)
    try:
        stored = await reopened.message_links.job_for_message("discord", "c1", "m1")
        assert stored is not None and stored.id == job.id
        assert stored.webhook_secret == "s3cret"
        found = await reopened.conversations.find_conversation_by_message("discord", "dm-7", "m9")
        assert found is not None and found.id == conversation.id
        history = await conversation_history(reopened.conversations, conversation.id)
        assert [m.content for m in history] == ["remember me"]
        settings = await reopened.settings.effective_settings(
            "discord", user_id="u1", channel_id=None, workspace_id=None
        )
        assert settings.temperature == 0.3
        assert (await reopened.ledger.usage_for_user("discord", "u1")).tokens == 15
        assert not await reopened.dedupe.remember_event("discord", "interaction-1")
    finally:
        await reopened.close()


async def test_effective_settings_defaults_need_no_rows(store: SqliteStore) -> None:
    settings = await store.settings.effective_settings(
        "web",
        user_id="nobody",
        channel_id="nowhere",
        workspace_id="",
        defaults=SettingValues(model="llm-3.5-turbo"),
    )
    assert (settings.model, settings.sources) == ("llm-3.5-turbo", {"model": "default"})
