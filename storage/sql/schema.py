"""genbot's schema: one history of migrations for both backends.

Each :class:`Migration` is a list of statements written once (``both``) with the few column
types that differ spelled ``$name`` (:data:`TYPES`), plus a part per backend only where the
statements themselves differ (an expression index, JSON functions). Versions 1–15 are the
statements earlier genbots ran, each backend's as it ran them (the same tables, columns,
types, defaults and indexes), so a database of any version upgrades in place.

Never edit a released migration: append a new one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from string import Template
from typing import Final

from storage.sql.dialect import Dialect

SPELLINGS: Final = (
    ("serial", "INTEGER PRIMARY KEY", "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY"),
    ("ref", "INTEGER", "bigint"),
    ("real", "REAL", "double precision"),
    ("json", "TEXT", "jsonb"),
    ("bool", "INTEGER", "boolean"),
    ("false", "0", "false"),
    ("blob", "BLOB", "bytea"),
    ("key", "TEXT", 'text COLLATE "C"'),
    ("rowid", " WITHOUT ROWID", ""),
)
"""Each ``$name``, as SQLite and as PostgreSQL spell it: ``$serial`` an integer key the database
numbers, ``$ref`` a column referring to one, ``$real`` a float, ``$json`` a JSON value,
``$bool``/``$false`` a flag, ``$blob`` bytes, ``$key`` a job id (compared byte by byte),
``$rowid`` SQLite's ``WITHOUT ROWID`` for tables keyed by text."""
TYPES: Final = {
    "sqlite": {name: sqlite for name, sqlite, _ in SPELLINGS},
    "postgres": {name: postgres for name, _, postgres in SPELLINGS},
}


@dataclass(frozen=True)
class Migration:
    """One schema step: its statements run in the transaction that records ``version``."""

    version: int
    name: str
    both: Sequence[str] = ()
    sqlite: Sequence[str] = ()
    postgres: Sequence[str] = ()

    def statements(self, dialect: Dialect) -> list[str]:
        """The step's statements as ``dialect`` runs them."""
        own = self.sqlite if dialect.name == "sqlite" else self.postgres
        return [Template(sql).substitute(TYPES[dialect.name]) for sql in (*self.both, *own)]


UNFINISHED_LITERALS_30: Final = (  # the predicate of migrations 10 and 30 (released)
    "'creating', 'failed', 'finished', 'pending', 'posting', 'processing', 'reporting',"
    " 'retry', 'staged', 'submitted', 'unknown'"
)
UNFINISHED_LITERALS: Final = (  # jobs_unfinished_by_owner's predicate, spelled out by queries
    "'cancelled', 'creating', 'failed', 'finished', 'pending', 'posting', 'processing',"
    " 'reporting', 'retry', 'staged', 'submitted', 'unknown'"
)

MIGRATIONS: Final[Sequence[Migration]] = (
    Migration(
        1,
        "conversations, messages, jobs, message links",
        both=(
            """CREATE TABLE conversations (id $serial, platform TEXT NOT NULL,
                workspace_id TEXT NOT NULL, channel_id TEXT NOT NULL, thread_key TEXT NOT NULL,
                kind TEXT NOT NULL, created_by TEXT, model TEXT, system_prompt TEXT,
                created_at $real NOT NULL, updated_at $real NOT NULL)""",
            "CREATE UNIQUE INDEX conversations_by_key"
            " ON conversations (platform, workspace_id, channel_id, thread_key)",
            """CREATE TABLE messages (id $serial,
                conversation_id $ref NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
                role TEXT NOT NULL, content TEXT, parts $json, function_call $json, name TEXT,
                token_count INTEGER NOT NULL DEFAULT 0, created_at $real NOT NULL)""",
            "CREATE INDEX messages_by_conversation ON messages (conversation_id, id)",
            """CREATE TABLE conversation_links (id $serial, platform TEXT NOT NULL,
                channel_id TEXT NOT NULL, message_id TEXT NOT NULL,
                conversation_id $ref NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
                chat_message_id $ref REFERENCES messages(id) ON DELETE SET NULL)""",
            "CREATE UNIQUE INDEX conversation_links_by_message_id"
            " ON conversation_links (platform, channel_id, message_id)",
            "CREATE INDEX conversation_links_by_conversation"
            " ON conversation_links (conversation_id)",
            "CREATE INDEX conversation_links_by_turn ON conversation_links (chat_message_id)",
            """CREATE TABLE jobs (id $key PRIMARY KEY, family TEXT NOT NULL, type TEXT NOT NULL,
                status TEXT NOT NULL, provider_id TEXT, parent_job_id $key REFERENCES jobs(id),
                action TEXT, requester_id TEXT NOT NULL, platform TEXT NOT NULL,
                workspace_id TEXT NOT NULL, channel_id TEXT NOT NULL, thread_id TEXT,
                progress_message_id TEXT, result_message_id TEXT, prompt TEXT NOT NULL DEFAULT '',
                parameters $json NOT NULL DEFAULT '{}', result_urls $json NOT NULL DEFAULT '[]',
                actions $json NOT NULL DEFAULT '[]', result $json NOT NULL DEFAULT '{}',
                error TEXT, webhook_secret TEXT, credits INTEGER, created_at $real NOT NULL,
                updated_at $real NOT NULL, finished_at $real, last_polled_at $real,
                last_webhook_at $real)""",
            "CREATE UNIQUE INDEX jobs_by_provider ON jobs (provider_id, family)",
            "CREATE UNIQUE INDEX jobs_by_parent_action ON jobs (parent_job_id, action)",
            "CREATE INDEX jobs_by_status ON jobs (status, created_at)",
            "CREATE INDEX jobs_by_requester_status ON jobs (platform, requester_id, status)",
            """CREATE TABLE job_messages (id $serial, platform TEXT NOT NULL,
                channel_id TEXT NOT NULL, message_id TEXT NOT NULL,
                job_id $key NOT NULL REFERENCES jobs(id) ON DELETE CASCADE, kind TEXT NOT NULL)""",
            "CREATE UNIQUE INDEX job_messages_by_message_id"
            " ON job_messages (platform, channel_id, message_id)",
            "CREATE INDEX job_messages_by_job ON job_messages (job_id)",
        ),
    ),
    Migration(
        2,
        "settings, usage ledger, event dedup, jobs.next_poll_at",
        both=(
            "ALTER TABLE jobs ADD COLUMN next_poll_at $real",
            """CREATE TABLE scope_settings (platform TEXT NOT NULL, kind TEXT NOT NULL,
                scope_id TEXT NOT NULL, model TEXT, system_prompt TEXT, process_mode TEXT,
                aspect_ratio TEXT, temperature $real, updated_at $real NOT NULL,
                PRIMARY KEY (platform, kind, scope_id))$rowid""",
            """CREATE TABLE usage (id $serial, platform TEXT NOT NULL, user_id TEXT NOT NULL,
                day TEXT NOT NULL, kind TEXT NOT NULL, job_id TEXT,
                tokens_prompt INTEGER NOT NULL DEFAULT 0,
                tokens_completion INTEGER NOT NULL DEFAULT 0, credits INTEGER NOT NULL DEFAULT 0,
                created_at $real NOT NULL)""",
            "CREATE INDEX usage_by_user_day ON usage (platform, user_id, day)",
            "CREATE INDEX usage_by_day ON usage (day, platform)",
            "CREATE UNIQUE INDEX usage_by_job ON usage (job_id, kind)",
            """CREATE TABLE processed_events (platform TEXT NOT NULL, event_id TEXT NOT NULL,
                seen_at $real NOT NULL, PRIMARY KEY (platform, event_id))$rowid""",
            "CREATE INDEX processed_events_by_age ON processed_events (seen_at)",
        ),
    ),
    Migration(
        3,
        "jobs.delivery_attempts",
        both=("ALTER TABLE jobs ADD COLUMN delivery_attempts INTEGER NOT NULL DEFAULT 0",),
    ),
    Migration(
        4,
        "jobs.post_claims",
        both=("ALTER TABLE jobs ADD COLUMN post_claims INTEGER NOT NULL DEFAULT 0",),
    ),
    Migration(
        5,
        "Slack installations and OAuth states",
        both=(
            """CREATE TABLE slack_installations (enterprise_id TEXT NOT NULL,
                team_id TEXT NOT NULL, user_id TEXT NOT NULL, installed_at $real NOT NULL,
                data $json NOT NULL, PRIMARY KEY (enterprise_id, team_id, user_id))$rowid""",
            "CREATE TABLE oauth_states (state TEXT PRIMARY KEY, expires_at $real NOT NULL)$rowid",
        ),
    ),
    Migration(
        6,
        "chat request settings and remix per scope",
        both=tuple(
            f"ALTER TABLE scope_settings ADD COLUMN {column}"
            for column in (
                "stream $bool",
                "remix $bool",
                "top_p $real",
                "presence_penalty $real",
                "frequency_penalty $real",
                "stop TEXT",
                "n INTEGER",
            )
        ),
    ),
    Migration(
        7,
        "job leases (jobs.owner, jobs.lease_until) and processes",
        both=(
            "ALTER TABLE jobs ADD COLUMN owner TEXT",
            "ALTER TABLE jobs ADD COLUMN lease_until $real",
            "CREATE INDEX jobs_by_owner ON jobs (owner, status)",
            """CREATE TABLE processes (id TEXT PRIMARY KEY, host TEXT NOT NULL,
                pid INTEGER NOT NULL, platforms $json NOT NULL DEFAULT '[]', shards TEXT,
                started_at $real NOT NULL, seen_at $real NOT NULL)$rowid""",
        ),
    ),
    Migration(
        8,
        "platform write slots shared by processes",
        both=(
            "CREATE TABLE write_slots"
            " (key TEXT NOT NULL, granted_at $real NOT NULL, until $real NOT NULL)",
            "CREATE INDEX write_slots_by_key ON write_slots (key, until)",
        ),
    ),
    Migration(
        9,
        "the playground's messages and images",
        both=(
            """CREATE TABLE playground_messages (seq $serial, id TEXT NOT NULL UNIQUE,
                channel TEXT NOT NULL, pending $bool NOT NULL DEFAULT $false,
                image_keys $json NOT NULL DEFAULT '[]', body $json NOT NULL)""",
            "CREATE INDEX playground_messages_by_channel ON playground_messages (channel, seq)",
            """CREATE TABLE playground_images (key TEXT PRIMARY KEY, filename TEXT NOT NULL,
                content_type TEXT NOT NULL, width INTEGER, height INTEGER,
                data $blob NOT NULL)$rowid""",
            "CREATE TABLE playground_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)$rowid",
        ),
    ),
    Migration(
        10,
        "an index of lease expiry over unfinished jobs",
        sqlite=(
            "CREATE INDEX jobs_by_lease_expiry ON jobs (COALESCE(lease_until, 0))"
            f" WHERE status IN ({UNFINISHED_LITERALS_30})",
        ),
        postgres=(
            "CREATE INDEX jobs_by_lease_expiry ON jobs ((COALESCE(lease_until, 0)))"
            f" WHERE status IN ({UNFINISHED_LITERALS_30})",
        ),
    ),
    Migration(
        11,
        "jobs.is_dm (was parameters.is_dm)",
        both=("ALTER TABLE jobs ADD COLUMN is_dm $bool NOT NULL DEFAULT $false",),
        sqlite=(
            "UPDATE jobs SET is_dm = 1, parameters = json_remove(parameters, '$$.is_dm')"
            " WHERE json_extract(parameters, '$$.is_dm') IS NOT NULL"
            " AND json_extract(parameters, '$$.is_dm') != 0",
            "UPDATE jobs SET parameters = json_remove(parameters, '$$.is_dm')"
            " WHERE json_extract(parameters, '$$.is_dm') IS NOT NULL",
        ),
        postgres=(
            "UPDATE jobs SET is_dm = COALESCE(parameters->>'is_dm' NOT IN ('false', '0', 'null'),"
            " false), parameters = parameters - 'is_dm' WHERE parameters ? 'is_dm'",
        ),
    ),
    Migration(
        12,
        "storage write probes (readiness)",
        both=(
            "CREATE TABLE storage_probes (process_id TEXT PRIMARY KEY, probed_at $real NOT NULL)",
        ),
    ),
    Migration(
        13,
        "jobs.lease_generation (fencing)",
        both=("ALTER TABLE jobs ADD COLUMN lease_generation INTEGER NOT NULL DEFAULT 0",),
    ),
    Migration(
        14,
        "jobs.command_key, playground message versions and command owners",
        both=(
            "ALTER TABLE jobs ADD COLUMN command_key TEXT",
            "CREATE UNIQUE INDEX jobs_by_command_key ON jobs (command_key)"
            " WHERE command_key IS NOT NULL",
            "ALTER TABLE playground_messages ADD COLUMN version INTEGER NOT NULL DEFAULT 1",
            "ALTER TABLE playground_messages ADD COLUMN owner TEXT",
        ),
    ),
    Migration(
        15,
        "an index of OAuth states by expiry",
        both=("CREATE INDEX oauth_states_by_expiry ON oauth_states (expires_at)",),
    ),
    Migration(
        16,
        "moderation: workspace rules, offences and bans",
        both=(
            """CREATE TABLE moderation_rules (platform TEXT NOT NULL, workspace_id TEXT NOT NULL,
                entry TEXT NOT NULL, is_pattern $bool NOT NULL, category TEXT NOT NULL,
                added_by TEXT NOT NULL, added_at $real NOT NULL,
                PRIMARY KEY (platform, workspace_id, entry, is_pattern))$rowid""",
            """CREATE TABLE moderation_offences (platform TEXT NOT NULL, user_id TEXT NOT NULL,
                day TEXT NOT NULL, offences INTEGER NOT NULL, banned_until $real NOT NULL,
                PRIMARY KEY (platform, user_id, day))$rowid""",
        ),
    ),
    Migration(
        17,
        "the audit log",
        both=(
            """CREATE TABLE audit_log (id $serial, at $real NOT NULL, platform TEXT NOT NULL,
                workspace_id TEXT NOT NULL, channel_id TEXT NOT NULL, actor_id TEXT NOT NULL,
                kind TEXT NOT NULL, target TEXT NOT NULL, state_before $json,
                state_after $json)""",
            "CREATE INDEX audit_log_by_workspace ON audit_log (platform, workspace_id, id)",
            "CREATE INDEX audit_log_by_time ON audit_log (at)",
            "CREATE TABLE audit_purge (due_at $real NOT NULL)",
            "INSERT INTO audit_purge (due_at) VALUES (0)",
        ),
    ),
    Migration(
        18,
        "jobs.provider_key (the pool of provider keys)",
        both=(
            "ALTER TABLE jobs ADD COLUMN provider_key TEXT",
            "CREATE INDEX jobs_by_provider_key ON jobs (provider_key, created_at)",
        ),
    ),
    Migration(
        19,
        "the archive: a full-text index of prompts, jobs by requester and workspace over time",
        both=(
            "DROP INDEX jobs_by_requester_status",
            "CREATE INDEX jobs_by_requester_status ON jobs (platform, requester_id, status,"
            " created_at)",
            "CREATE INDEX jobs_by_workspace_time ON jobs (workspace_id, platform, status,"
            " created_at)",
        ),
        sqlite=(
            "CREATE VIRTUAL TABLE job_words USING fts5(prompt, content='jobs')",
            "INSERT INTO job_words (job_words) VALUES ('rebuild')",
            """CREATE TRIGGER jobs_words_insert AFTER INSERT ON jobs BEGIN
                INSERT INTO job_words (rowid, prompt) VALUES (new.rowid, new.prompt); END""",
            """CREATE TRIGGER jobs_words_delete AFTER DELETE ON jobs BEGIN
                INSERT INTO job_words (job_words, rowid, prompt)
                VALUES ('delete', old.rowid, old.prompt); END""",
            """CREATE TRIGGER jobs_words_update AFTER UPDATE OF prompt ON jobs BEGIN
                INSERT INTO job_words (job_words, rowid, prompt)
                VALUES ('delete', old.rowid, old.prompt);
                INSERT INTO job_words (rowid, prompt) VALUES (new.rowid, new.prompt); END""",
        ),
        postgres=(
            "ALTER TABLE jobs ADD COLUMN prompt_words tsvector"
            " GENERATED ALWAYS AS (to_tsvector('simple', prompt)) STORED",
            "CREATE INDEX jobs_by_prompt_words ON jobs USING GIN (prompt_words)",
        ),
    ),
    Migration(
        20,
        "retention: purge turns, conversations by age, when playground images were stored",
        both=(
            "CREATE TABLE purge_turns (name TEXT PRIMARY KEY, due_at $real NOT NULL)$rowid",
            "INSERT INTO purge_turns (name, due_at) VALUES ('retention', 0)",
            "CREATE INDEX conversations_by_age ON conversations (updated_at)",
            "ALTER TABLE playground_images ADD COLUMN created_at $real NOT NULL DEFAULT 0",
        ),
        sqlite=("UPDATE playground_images SET created_at = CAST(strftime('%s', 'now') AS REAL)",),
        postgres=("UPDATE playground_images SET created_at = extract(epoch FROM now())",),
    ),
    Migration(
        21,
        "hosted media in the database (every process serves what one received)",
        both=(
            """CREATE TABLE hosted_media (name TEXT PRIMARY KEY, owner TEXT,
                content_type TEXT NOT NULL, data $blob NOT NULL, size INTEGER NOT NULL,
                created_at $real NOT NULL, expires_at $real NOT NULL,
                fetches INTEGER NOT NULL)$rowid""",
            "CREATE INDEX hosted_media_by_age ON hosted_media (created_at)",
        ),
    ),
    Migration(
        22,
        "chat answers' controls: who was answered, by which model, stopped or replaced; feedback",
        both=(
            "ALTER TABLE messages ADD COLUMN state TEXT",
            "ALTER TABLE messages ADD COLUMN model TEXT",
            "ALTER TABLE messages ADD COLUMN asked_by TEXT",
            """CREATE TABLE chat_feedback (
                message_id $ref NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
                user_id TEXT NOT NULL, platform TEXT NOT NULL, workspace_id TEXT NOT NULL,
                model TEXT NOT NULL, rating INTEGER NOT NULL, at $real NOT NULL,
                PRIMARY KEY (message_id, user_id))$rowid""",
            "CREATE INDEX chat_feedback_by_workspace"
            " ON chat_feedback (platform, workspace_id, model)",
        ),
    ),
    Migration(
        23,
        "conversation branches: turns set aside on another branch (messages.branch)",
        both=(
            "ALTER TABLE messages ADD COLUMN branch INTEGER",
            """CREATE TABLE chat_branches (id $serial,
                conversation_id $ref NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
                fork_turn INTEGER NOT NULL, number INTEGER NOT NULL,
                first_turn INTEGER NOT NULL)""",
            "CREATE UNIQUE INDEX chat_branches_by_fork"
            " ON chat_branches (conversation_id, fork_turn, number)",
            "CREATE INDEX chat_branches_by_first_turn ON chat_branches (first_turn)",
        ),
    ),
    Migration(
        24,
        "saved options (/prefer) and the previews of batches of jobs",
        both=(
            """CREATE TABLE saved_options (platform TEXT NOT NULL, user_id TEXT NOT NULL,
                channel_id TEXT NOT NULL, name TEXT NOT NULL, text TEXT NOT NULL,
                updated_at $real NOT NULL,
                PRIMARY KEY (platform, user_id, name, channel_id))$rowid""",
            """CREATE TABLE batches (id TEXT PRIMARY KEY, platform TEXT NOT NULL,
                workspace_id TEXT NOT NULL, channel_id TEXT NOT NULL, requester_id TEXT NOT NULL,
                command $json NOT NULL, total INTEGER NOT NULL, started INTEGER NOT NULL,
                created_at $real NOT NULL, expires_at $real NOT NULL, outcome TEXT,
                settled_at $real)$rowid""",
            "CREATE INDEX batches_by_expiry ON batches (expires_at)",
            "CREATE INDEX batches_by_outcome ON batches (outcome, started)",
        ),
    ),
    Migration(
        25,
        "the workspace's jobs over time by whether they were made in a DM",
        both=(
            "DROP INDEX jobs_by_workspace_time",
            "CREATE INDEX jobs_by_workspace_time ON jobs (workspace_id, platform, status, is_dm,"
            " created_at)",
        ),
    ),
    Migration(
        26,
        "the channel each Slack user looks at beside genbot's Messages tab",
        both=(
            """CREATE TABLE slack_channels_in_view (team_id TEXT NOT NULL,
                user_id TEXT NOT NULL, channel_id TEXT NOT NULL, at $real NOT NULL,
                PRIMARY KEY (team_id, user_id))$rowid""",
        ),
    ),
    Migration(
        27,
        "the language genbot speaks per user, channel and workspace (/settings language)",
        both=("ALTER TABLE scope_settings ADD COLUMN language TEXT",),
    ),
    Migration(
        28,
        "who wrote each user turn (messages.author), derived for earlier turns where known",
        both=(
            "ALTER TABLE messages ADD COLUMN author TEXT",
            "CREATE INDEX messages_by_author ON messages (author)",
            # A DM conversation's turns are its user's.
            """UPDATE messages SET author = (SELECT c.created_by FROM conversations AS c
                WHERE c.id = messages.conversation_id AND c.kind = 'dm')
                WHERE role = 'user'""",
            # Elsewhere, the turn's first answer was for its author (asked_by).
            """UPDATE messages SET author = (SELECT a.asked_by FROM messages AS a
                WHERE a.conversation_id = messages.conversation_id AND a.id > messages.id
                AND a.asked_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM messages AS u
                    WHERE u.conversation_id = messages.conversation_id AND u.role = 'user'
                    AND u.id > messages.id AND u.id < a.id)
                ORDER BY a.id LIMIT 1)
                WHERE role = 'user' AND author IS NULL""",
            # An edit is its message's author's: every first turn of a fork's branches has one.
            """UPDATE messages SET author = (SELECT MAX(o.author) FROM chat_branches AS b
                JOIN chat_branches AS f ON f.conversation_id = b.conversation_id
                    AND f.fork_turn = b.fork_turn
                JOIN messages AS o ON o.id = f.first_turn
                WHERE b.first_turn = messages.id)
                WHERE role = 'user' AND author IS NULL""",
        ),
    ),
    Migration(
        29,
        "a shared write's slot, so it counts from when its call returned (write_slots.slot)",
        both=("ALTER TABLE write_slots ADD COLUMN slot $ref",),
    ),
    Migration(
        30,
        "a process's lease (processes.lease_until) instead of each job's renewal; unfinished"
        " jobs by owner in place of the lease-expiry index",
        both=(
            "ALTER TABLE processes ADD COLUMN lease_until $real",
            "CREATE INDEX jobs_unfinished_by_owner ON jobs (owner)"
            f" WHERE status IN ({UNFINISHED_LITERALS_30})",
            "DROP INDEX jobs_by_lease_expiry",
        ),
    ),
    Migration(
        31,
        "the answers being streamed (messages.state 'streaming'), which a process that outlives"
        " the one streaming them settles",
        both=("CREATE INDEX messages_streaming ON messages (id) WHERE state = 'streaming'",),
    ),
    Migration(
        32,
        "cancelled jobs (followed until the provider is done) among the unfinished jobs by owner",
        both=(
            "DROP INDEX jobs_unfinished_by_owner",
            "CREATE INDEX jobs_unfinished_by_owner ON jobs (owner)"
            f" WHERE status IN ({UNFINISHED_LITERALS})",
        ),
    ),
    Migration(
        33,
        "who set a day's running ban: an admin (moderation_offences.banned_by_admin), or the"
        " day's refused prompts",
        both=(
            "ALTER TABLE moderation_offences"
            " ADD COLUMN banned_by_admin $bool NOT NULL DEFAULT $false",
        ),
    ),
)
LATEST_VERSION: Final = MIGRATIONS[-1].version
