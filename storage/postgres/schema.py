"""Versioned PostgreSQL schema, version for version the same as SQLite's
(:mod:`storage.sqlite.schema`), applied at start under an advisory lock.

Many processes may start at once on an empty database: the first to take the lock migrates,
the others wait for it and then find nothing left to do. Each migration commits on its own,
with its ``schema_version`` row. A database newer than this code is refused.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from storage.errors import StorageError
from storage.postgres.pool import Connection

Query = str

log = logging.getLogger("genbot.storage")

MIGRATION_LOCK = 0x67656E626F74
"""The advisory lock key held while migrating (``genbot`` in ASCII)."""


@dataclass(frozen=True)
class Migration:
    """One schema step: ``statements`` run in the transaction that records ``version``."""

    version: int
    name: str
    statements: Sequence[Query]


_V1: tuple[Query, ...] = (
    """CREATE TABLE conversations (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        platform text NOT NULL,
        workspace_id text NOT NULL,
        channel_id text NOT NULL,
        thread_key text NOT NULL,
        kind text NOT NULL,
        created_by text,
        model text,
        system_prompt text,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL
    )""",
    "CREATE UNIQUE INDEX conversations_by_key"
    " ON conversations (platform, workspace_id, channel_id, thread_key)",
    """CREATE TABLE messages (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        conversation_id bigint NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        role text NOT NULL,
        content text,
        parts jsonb,
        function_call jsonb,
        name text,
        token_count integer NOT NULL DEFAULT 0,
        created_at double precision NOT NULL
    )""",
    "CREATE INDEX messages_by_conversation ON messages (conversation_id, id)",
    """CREATE TABLE conversation_links (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        platform text NOT NULL,
        channel_id text NOT NULL,
        message_id text NOT NULL,
        conversation_id bigint NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        chat_message_id bigint REFERENCES messages(id) ON DELETE SET NULL
    )""",
    "CREATE UNIQUE INDEX conversation_links_by_message_id"
    " ON conversation_links (platform, channel_id, message_id)",
    "CREATE INDEX conversation_links_by_conversation ON conversation_links (conversation_id)",
    "CREATE INDEX conversation_links_by_turn ON conversation_links (chat_message_id)",
    """CREATE TABLE jobs (
        id text COLLATE "C" PRIMARY KEY,
        family text NOT NULL,
        type text NOT NULL,
        status text NOT NULL,
        provider_id text,
        parent_job_id text COLLATE "C" REFERENCES jobs(id),
        action text,
        requester_id text NOT NULL,
        platform text NOT NULL,
        workspace_id text NOT NULL,
        channel_id text NOT NULL,
        thread_id text,
        progress_message_id text,
        result_message_id text,
        prompt text NOT NULL DEFAULT '',
        parameters jsonb NOT NULL DEFAULT '{}',
        result_urls jsonb NOT NULL DEFAULT '[]',
        actions jsonb NOT NULL DEFAULT '[]',
        result jsonb NOT NULL DEFAULT '{}',
        error text,
        webhook_secret text,
        credits integer,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL,
        finished_at double precision,
        last_polled_at double precision,
        last_webhook_at double precision
    )""",
    "CREATE UNIQUE INDEX jobs_by_provider ON jobs (provider_id, family)",
    "CREATE UNIQUE INDEX jobs_by_parent_action ON jobs (parent_job_id, action)",
    "CREATE INDEX jobs_by_status ON jobs (status, created_at)",
    "CREATE INDEX jobs_by_requester_status ON jobs (platform, requester_id, status)",
    """CREATE TABLE job_messages (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        platform text NOT NULL,
        channel_id text NOT NULL,
        message_id text NOT NULL,
        job_id text COLLATE "C" NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        kind text NOT NULL
    )""",
    "CREATE UNIQUE INDEX job_messages_by_message_id"
    " ON job_messages (platform, channel_id, message_id)",
    "CREATE INDEX job_messages_by_job ON job_messages (job_id)",
)

_V2: tuple[Query, ...] = (
    "ALTER TABLE jobs ADD COLUMN next_poll_at double precision",
    """CREATE TABLE scope_settings (
        platform text NOT NULL,
        kind text NOT NULL,
        scope_id text NOT NULL,
        model text,
        system_prompt text,
        process_mode text,
        aspect_ratio text,
        temperature double precision,
        updated_at double precision NOT NULL,
        PRIMARY KEY (platform, kind, scope_id)
    )""",
    """CREATE TABLE usage (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        platform text NOT NULL,
        user_id text NOT NULL,
        day text NOT NULL,
        kind text NOT NULL,
        job_id text,
        tokens_prompt integer NOT NULL DEFAULT 0,
        tokens_completion integer NOT NULL DEFAULT 0,
        credits integer NOT NULL DEFAULT 0,
        created_at double precision NOT NULL
    )""",
    "CREATE INDEX usage_by_user_day ON usage (platform, user_id, day)",
    "CREATE INDEX usage_by_day ON usage (day, platform)",
    "CREATE UNIQUE INDEX usage_by_job ON usage (job_id, kind)",
    """CREATE TABLE processed_events (
        platform text NOT NULL,
        event_id text NOT NULL,
        seen_at double precision NOT NULL,
        PRIMARY KEY (platform, event_id)
    )""",
    "CREATE INDEX processed_events_by_age ON processed_events (seen_at)",
)

_V5: tuple[Query, ...] = (
    """CREATE TABLE slack_installations (
        enterprise_id text NOT NULL,
        team_id text NOT NULL,
        user_id text NOT NULL,
        installed_at double precision NOT NULL,
        data jsonb NOT NULL,
        PRIMARY KEY (enterprise_id, team_id, user_id)
    )""",
    """CREATE TABLE oauth_states (
        state text PRIMARY KEY,
        expires_at double precision NOT NULL
    )""",
)

_V7: tuple[Query, ...] = (
    "ALTER TABLE jobs ADD COLUMN owner text",
    "ALTER TABLE jobs ADD COLUMN lease_until double precision",
    "CREATE INDEX jobs_by_owner ON jobs (owner, status)",
    """CREATE TABLE processes (
        id text PRIMARY KEY,
        host text NOT NULL,
        pid integer NOT NULL,
        platforms jsonb NOT NULL DEFAULT '[]',
        shards text,
        started_at double precision NOT NULL,
        seen_at double precision NOT NULL
    )""",
)

_V9: tuple[Query, ...] = (
    """CREATE TABLE playground_messages (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL UNIQUE,
        channel text NOT NULL,
        pending boolean NOT NULL DEFAULT false,
        image_keys jsonb NOT NULL DEFAULT '[]',
        body jsonb NOT NULL
    )""",
    "CREATE INDEX playground_messages_by_channel ON playground_messages (channel, seq)",
    """CREATE TABLE playground_images (
        key text PRIMARY KEY,
        filename text NOT NULL,
        content_type text NOT NULL,
        width integer,
        height integer,
        data bytea NOT NULL
    )""",
    "CREATE TABLE playground_meta (name text PRIMARY KEY, value text NOT NULL)",
)

MIGRATIONS: Sequence[Migration] = (
    Migration(1, "conversations, messages, jobs, message links", _V1),
    Migration(2, "settings, usage ledger, event dedup, jobs.next_poll_at", _V2),
    Migration(
        3,
        "jobs.delivery_attempts",
        ("ALTER TABLE jobs ADD COLUMN delivery_attempts integer NOT NULL DEFAULT 0",),
    ),
    Migration(
        4,
        "jobs.post_claims",
        ("ALTER TABLE jobs ADD COLUMN post_claims integer NOT NULL DEFAULT 0",),
    ),
    Migration(5, "Slack installations and OAuth states", _V5),
    Migration(
        6,
        "chat request settings and remix per scope",
        (
            "ALTER TABLE scope_settings ADD COLUMN stream boolean,"
            " ADD COLUMN remix boolean, ADD COLUMN top_p double precision,"
            " ADD COLUMN presence_penalty double precision,"
            " ADD COLUMN frequency_penalty double precision, ADD COLUMN stop text,"
            " ADD COLUMN n integer",
        ),
    ),
    Migration(7, "job leases (jobs.owner, jobs.lease_until) and processes", _V7),
    Migration(
        8,
        "platform write slots shared by processes",
        (
            "CREATE TABLE write_slots (key text NOT NULL,"
            " granted_at double precision NOT NULL, until double precision NOT NULL)",
            "CREATE INDEX write_slots_by_key ON write_slots (key, until)",
        ),
    ),
    Migration(9, "the playground's messages and images", _V9),
    Migration(
        10,
        "an index of lease expiry over unfinished jobs",
        (
            "CREATE INDEX jobs_by_lease_expiry ON jobs ((COALESCE(lease_until, 0)))"
            " WHERE status IN ('creating', 'failed', 'finished', 'pending', 'posting',"
            " 'processing', 'reporting', 'retry', 'staged', 'submitted', 'unknown')",
        ),
    ),
    Migration(
        11,
        "jobs.is_dm (was parameters.is_dm)",
        (
            "ALTER TABLE jobs ADD COLUMN is_dm boolean NOT NULL DEFAULT false",
            "UPDATE jobs SET is_dm = COALESCE(parameters->>'is_dm' NOT IN ('false', '0', 'null'),"
            " false), parameters = parameters - 'is_dm' WHERE parameters ? 'is_dm'",
        ),
    ),
    Migration(
        12,
        "storage write probes (readiness)",
        (
            "CREATE TABLE storage_probes (process_id text PRIMARY KEY,"
            " probed_at double precision NOT NULL)",
        ),
    ),
    Migration(
        13,
        "jobs.lease_generation (fencing)",
        ("ALTER TABLE jobs ADD COLUMN lease_generation integer NOT NULL DEFAULT 0",),
    ),
    Migration(
        14,
        "jobs.command_key, playground message versions and command owners",
        (
            "ALTER TABLE jobs ADD COLUMN command_key text",
            "CREATE UNIQUE INDEX jobs_by_command_key ON jobs (command_key)"
            " WHERE command_key IS NOT NULL",
            "ALTER TABLE playground_messages ADD COLUMN version integer NOT NULL DEFAULT 1,"
            " ADD COLUMN owner text",
        ),
    ),
    Migration(
        15,
        "an index of OAuth states by expiry",
        ("CREATE INDEX oauth_states_by_expiry ON oauth_states (expires_at)",),
    ),
)
LATEST_VERSION = MIGRATIONS[-1].version

SQL_CREATE_VERSIONS: Query = (
    "CREATE TABLE IF NOT EXISTS schema_version ("
    " version integer PRIMARY KEY, name text NOT NULL, applied_at double precision NOT NULL)"
)
SQL_CURRENT_VERSION: Query = "SELECT COALESCE(MAX(version), 0) AS version FROM schema_version"
SQL_RECORD_VERSION: Query = (
    "INSERT INTO schema_version (version, name, applied_at) VALUES (%s, %s, %s)"
)


async def current_version(conn: Connection) -> int:
    """The schema version (0 for an empty database); the version table must exist."""
    cursor = await conn.execute(SQL_CURRENT_VERSION)
    row = await cursor.fetchone()
    return 0 if row is None else int(row["version"])


async def migrate(
    conn: Connection, *, target: int = LATEST_VERSION, clock: Callable[[], float] = time.time
) -> int:
    """Bring the database up to ``target`` (default: the latest) while holding the migration
    lock; returns the resulting version. ``conn`` must be in autocommit mode."""
    await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        await conn.execute(SQL_CREATE_VERSIONS)
        version = await current_version(conn)
        if version > LATEST_VERSION:
            raise StorageError(
                f"database schema version {version} is newer than this genbot supports "
                f"({LATEST_VERSION}); upgrade genbot"
            )
        for migration in MIGRATIONS:
            if not version < migration.version <= target:
                continue
            async with conn.transaction():
                for statement in migration.statements:
                    await conn.execute(statement)
                await conn.execute(SQL_RECORD_VERSION, (migration.version, migration.name, clock()))
            version = migration.version
            log.info("database migrated to schema version %d (%s)", version, migration.name)
        return version
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
