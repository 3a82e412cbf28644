"""Versioned schema: an ordered list of migrations and the ``schema_version`` table.

Opening a database applies every migration above its recorded version, each in its own
transaction together with its ``schema_version`` row. Never edit a released migration: append
a new one. A database newer than this code is refused.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from sqlite_utils import Database

from storage.errors import StorageError

log = logging.getLogger("genbot.storage")


@contextmanager
def write_transaction(db: Database) -> Iterator[Database]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; rolls back on error."""
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        raise
    db.conn.execute("COMMIT")


@dataclass(frozen=True)
class Migration:
    """One schema step: ``apply`` runs inside the transaction that records ``version``."""

    version: int
    name: str
    apply: Callable[[Database], None]


def _v1_conversations_and_jobs(db: Database) -> None:
    db.execute(
        """
        CREATE TABLE conversations (
            id INTEGER PRIMARY KEY,
            platform TEXT NOT NULL,
            workspace_id TEXT NOT NULL,
            channel_id TEXT NOT NULL,
            thread_key TEXT NOT NULL,
            kind TEXT NOT NULL,
            created_by TEXT,
            model TEXT,
            system_prompt TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )"""
    )
    db.table("conversations").create_index(
        ["platform", "workspace_id", "channel_id", "thread_key"],
        index_name="conversations_by_key",
        unique=True,
    )
    db.execute(
        """
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            role TEXT NOT NULL,
            content TEXT,
            parts TEXT,
            function_call TEXT,
            name TEXT,
            token_count INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL
        )"""
    )
    db.table("messages").create_index(
        ["conversation_id", "id"], index_name="messages_by_conversation"
    )
    db.execute(
        """
        CREATE TABLE conversation_links (
            id INTEGER PRIMARY KEY,
            platform TEXT NOT NULL,
            channel_id TEXT NOT NULL,
            message_id TEXT NOT NULL,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            chat_message_id INTEGER REFERENCES messages(id) ON DELETE SET NULL
        )"""
    )
    db.table("conversation_links").create_index(
        ["platform", "channel_id", "message_id"],
        index_name="conversation_links_by_message_id",
        unique=True,
    )
    db.table("conversation_links").create_index(
        ["conversation_id"], index_name="conversation_links_by_conversation"
    )
    db.table("conversation_links").create_index(
        ["chat_message_id"], index_name="conversation_links_by_turn"
    )
    db.execute(
        """
        CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            family TEXT NOT NULL,
            type TEXT NOT NULL,
            status TEXT NOT NULL,
            provider_id TEXT,
            parent_job_id TEXT REFERENCES jobs(id),
            action TEXT,
            requester_id TEXT NOT NULL,
            platform TEXT NOT NULL,
            workspace_id TEXT NOT NULL,
            channel_id TEXT NOT NULL,
            thread_id TEXT,
            progress_message_id TEXT,
            result_message_id TEXT,
            prompt TEXT NOT NULL DEFAULT '',
            parameters TEXT NOT NULL DEFAULT '{}',
            result_urls TEXT NOT NULL DEFAULT '[]',
            actions TEXT NOT NULL DEFAULT '[]',
            result TEXT NOT NULL DEFAULT '{}',
            error TEXT,
            webhook_secret TEXT,
            credits INTEGER,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            finished_at REAL,
            last_polled_at REAL,
            last_webhook_at REAL
        )"""
    )
    jobs = db.table("jobs")
    jobs.create_index(["provider_id", "family"], index_name="jobs_by_provider", unique=True)
    jobs.create_index(["parent_job_id", "action"], index_name="jobs_by_parent_action", unique=True)
    jobs.create_index(["status", "created_at"], index_name="jobs_by_status")
    jobs.create_index(["platform", "requester_id", "status"], index_name="jobs_by_requester_status")
    db.execute(
        """
        CREATE TABLE job_messages (
            id INTEGER PRIMARY KEY,
            platform TEXT NOT NULL,
            channel_id TEXT NOT NULL,
            message_id TEXT NOT NULL,
            job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
            kind TEXT NOT NULL
        )"""
    )
    db.table("job_messages").create_index(
        ["platform", "channel_id", "message_id"],
        index_name="job_messages_by_message_id",
        unique=True,
    )
    db.table("job_messages").create_index(["job_id"], index_name="job_messages_by_job")


def _v2_settings_usage_events(db: Database) -> None:
    db.table("jobs").add_column("next_poll_at", float)
    db.execute(
        """
        CREATE TABLE scope_settings (
            platform TEXT NOT NULL,
            kind TEXT NOT NULL,
            scope_id TEXT NOT NULL,
            model TEXT,
            system_prompt TEXT,
            process_mode TEXT,
            aspect_ratio TEXT,
            temperature REAL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (platform, kind, scope_id)
        ) WITHOUT ROWID"""
    )
    db.execute(
        """
        CREATE TABLE usage (
            id INTEGER PRIMARY KEY,
            platform TEXT NOT NULL,
            user_id TEXT NOT NULL,
            day TEXT NOT NULL,
            kind TEXT NOT NULL,
            job_id TEXT,
            tokens_prompt INTEGER NOT NULL DEFAULT 0,
            tokens_completion INTEGER NOT NULL DEFAULT 0,
            credits INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL
        )"""
    )
    usage = db.table("usage")
    usage.create_index(["platform", "user_id", "day"], index_name="usage_by_user_day")
    usage.create_index(["day", "platform"], index_name="usage_by_day")
    usage.create_index(["job_id", "kind"], index_name="usage_by_job", unique=True)
    db.execute(
        """
        CREATE TABLE processed_events (
            platform TEXT NOT NULL,
            event_id TEXT NOT NULL,
            seen_at REAL NOT NULL,
            PRIMARY KEY (platform, event_id)
        ) WITHOUT ROWID"""
    )
    db.table("processed_events").create_index(["seen_at"], index_name="processed_events_by_age")


def _v3_delivery_attempts(db: Database) -> None:
    db.execute("ALTER TABLE jobs ADD COLUMN delivery_attempts INTEGER NOT NULL DEFAULT 0")


def _v4_post_claims(db: Database) -> None:
    db.execute("ALTER TABLE jobs ADD COLUMN post_claims INTEGER NOT NULL DEFAULT 0")


def _v5_slack_installations(db: Database) -> None:
    db.execute(
        """
        CREATE TABLE slack_installations (
            enterprise_id TEXT NOT NULL,
            team_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            installed_at REAL NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (enterprise_id, team_id, user_id)
        ) WITHOUT ROWID"""
    )
    db.execute(
        """
        CREATE TABLE oauth_states (
            state TEXT PRIMARY KEY,
            expires_at REAL NOT NULL
        ) WITHOUT ROWID"""
    )


def _v6_chat_settings(db: Database) -> None:
    table = db.table("scope_settings")
    for name, kind in CHAT_SETTING_COLUMNS:
        table.add_column(name, kind)


CHAT_SETTING_COLUMNS: tuple[tuple[str, type], ...] = (
    ("stream", int),
    ("remix", int),
    ("top_p", float),
    ("presence_penalty", float),
    ("frequency_penalty", float),
    ("stop", str),
    ("n", int),
)


def _v7_leases_and_processes(db: Database) -> None:
    db.execute("ALTER TABLE jobs ADD COLUMN owner TEXT")
    db.execute("ALTER TABLE jobs ADD COLUMN lease_until REAL")
    db.table("jobs").create_index(["owner", "status"], index_name="jobs_by_owner")
    db.execute(
        """
        CREATE TABLE processes (
            id TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            platforms TEXT NOT NULL DEFAULT '[]',
            shards TEXT,
            started_at REAL NOT NULL,
            seen_at REAL NOT NULL
        ) WITHOUT ROWID"""
    )


def _v8_write_slots(db: Database) -> None:
    db.execute(
        "CREATE TABLE write_slots (key TEXT NOT NULL, granted_at REAL NOT NULL,"
        " until REAL NOT NULL)"
    )
    db.table("write_slots").create_index(["key", "until"], index_name="write_slots_by_key")


def _v9_playground(db: Database) -> None:
    db.execute(
        """
        CREATE TABLE playground_messages (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            channel TEXT NOT NULL,
            pending INTEGER NOT NULL DEFAULT 0,
            image_keys TEXT NOT NULL DEFAULT '[]',
            body TEXT NOT NULL
        )"""
    )
    db.table("playground_messages").create_index(
        ["channel", "seq"], index_name="playground_messages_by_channel"
    )
    db.execute(
        """
        CREATE TABLE playground_images (
            key TEXT PRIMARY KEY,
            filename TEXT NOT NULL,
            content_type TEXT NOT NULL,
            width INTEGER,
            height INTEGER,
            data BLOB NOT NULL
        ) WITHOUT ROWID"""
    )
    db.execute(
        "CREATE TABLE playground_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"
    )


def _v10_lease_expiry(db: Database) -> None:
    db.execute(
        "CREATE INDEX jobs_by_lease_expiry ON jobs (COALESCE(lease_until, 0))"
        " WHERE status IN ('creating', 'failed', 'finished', 'pending', 'posting',"
        " 'processing', 'reporting', 'retry', 'staged', 'submitted', 'unknown')"
    )


def _v11_is_dm(db: Database) -> None:
    db.execute("ALTER TABLE jobs ADD COLUMN is_dm INTEGER NOT NULL DEFAULT 0")
    db.execute(
        "UPDATE jobs SET is_dm = 1, parameters = json_remove(parameters, '$.is_dm')"
        " WHERE json_extract(parameters, '$.is_dm') IS NOT NULL"
        " AND json_extract(parameters, '$.is_dm') != 0"
    )
    db.execute(
        "UPDATE jobs SET parameters = json_remove(parameters, '$.is_dm')"
        " WHERE json_extract(parameters, '$.is_dm') IS NOT NULL"
    )


def _v12_storage_probes(db: Database) -> None:
    db.execute("CREATE TABLE storage_probes (process_id TEXT PRIMARY KEY, probed_at REAL NOT NULL)")


def _v13_lease_generation(db: Database) -> None:
    db.execute("ALTER TABLE jobs ADD COLUMN lease_generation INTEGER NOT NULL DEFAULT 0")


def _v14_command_keys_and_versions(db: Database) -> None:
    db.execute("ALTER TABLE jobs ADD COLUMN command_key TEXT")
    db.execute(
        "CREATE UNIQUE INDEX jobs_by_command_key ON jobs (command_key)"
        " WHERE command_key IS NOT NULL"
    )
    db.execute("ALTER TABLE playground_messages ADD COLUMN version INTEGER NOT NULL DEFAULT 1")
    db.execute("ALTER TABLE playground_messages ADD COLUMN owner TEXT")


def _v15_oauth_state_expiry(db: Database) -> None:
    db.execute("CREATE INDEX oauth_states_by_expiry ON oauth_states (expires_at)")


MIGRATIONS: Sequence[Migration] = (
    Migration(1, "conversations, messages, jobs, message links", _v1_conversations_and_jobs),
    Migration(
        2, "settings, usage ledger, event dedup, jobs.next_poll_at", _v2_settings_usage_events
    ),
    Migration(3, "jobs.delivery_attempts", _v3_delivery_attempts),
    Migration(4, "jobs.post_claims", _v4_post_claims),
    Migration(5, "Slack installations and OAuth states", _v5_slack_installations),
    Migration(6, "chat request settings and remix per scope", _v6_chat_settings),
    Migration(
        7, "job leases (jobs.owner, jobs.lease_until) and processes", _v7_leases_and_processes
    ),
    Migration(8, "platform write slots shared by processes", _v8_write_slots),
    Migration(9, "the playground's messages and images", _v9_playground),
    Migration(10, "an index of lease expiry over unfinished jobs", _v10_lease_expiry),
    Migration(11, "jobs.is_dm (was parameters.is_dm)", _v11_is_dm),
    Migration(12, "storage write probes (readiness)", _v12_storage_probes),
    Migration(13, "jobs.lease_generation (fencing)", _v13_lease_generation),
    Migration(
        14,
        "jobs.command_key, playground message versions and command owners",
        _v14_command_keys_and_versions,
    ),
    Migration(15, "an index of OAuth states by expiry", _v15_oauth_state_expiry),
)
LATEST_VERSION = MIGRATIONS[-1].version


def current_version(db: Database) -> int:
    """The database's schema version (0 for an empty database)."""
    if not db.table("schema_version").exists():
        return 0
    row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def migrate(
    db: Database, *, target: int = LATEST_VERSION, clock: Callable[[], float] = time.time
) -> int:
    """Bring ``db`` up to ``target`` (default: the latest); returns the resulting version.

    ``db`` must have no open transaction. Each migration commits on its own (with its
    ``schema_version`` row), so a crash leaves the database at the last completed version; two
    processes opening the same file at once apply each migration once.
    """
    db.execute(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    version = current_version(db)
    if version > LATEST_VERSION:
        raise StorageError(
            f"database schema version {version} is newer than this genbot supports "
            f"({LATEST_VERSION}); upgrade genbot"
        )
    for migration in MIGRATIONS:
        if not version < migration.version <= target:
            continue
        with write_transaction(db):
            if current_version(db) >= migration.version:
                version = current_version(db)
                continue
            migration.apply(db)
            db.execute(
                "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, clock()),
            )
        version = migration.version
        log.info("database migrated to schema version %d (%s)", version, migration.name)
    return version
