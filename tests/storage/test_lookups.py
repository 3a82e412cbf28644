"""Every lookup the storage makes can use an index, on both backends (the planner's own word:
SQLite's ``EXPLAIN QUERY PLAN``, PostgreSQL's ``EXPLAIN`` with sequential scans off)."""

from __future__ import annotations

from typing import Any

import pytest

from storage import ACTIVE_STATUSES, Store
from storage.queries import (
    admission,
    conversations,
    jobs,
    ledger,
    moderation,
    preferences,
    settings,
    slack,
    tracking,
)
from storage.sql.session import Session

LOOKUPS: dict[str, tuple[str, tuple[Any, ...], str]] = {
    # "a|b": either index may serve (the planner chooses on an empty table)
    "job for message": (jobs.SQL_JOB_FOR_MESSAGE, ("p", "c", "m"), "job_messages_by_message_id"),
    "job by id": (jobs.SQL_JOB_BY_ID, ("j",), "sqlite_autoindex_jobs_1|jobs_pkey"),
    "derivative": (admission.SQL_DERIVATIVE, ("j", "a"), "jobs_by_parent_action"),
    "active jobs of a user": (
        admission.SQL_COUNT_ACTIVE,
        ("p", "u", *sorted(ACTIVE_STATUSES)),
        "jobs_by_requester_status",
    ),
    "spent in a refill window": (
        ledger.SQL_SPENT,
        ("p", "u", "erased-u", "2024-03-01", "2024-03-02", 0.0),
        "usage_by_user_day|usage_by_day",
    ),
    "unfinished jobs": (
        tracking.SQL_UNFINISHED.format("*", "status IN (?, ?)"),
        ("processing", "submitted"),
        "jobs_by_status",
    ),
    "next scheduled poll": (
        tracking.SQL_NEXT_POLL.format("?"),
        ("processing", 0.0),
        "jobs_by_status",
    ),
    "conversation by key": (
        conversations.SQL_CONVERSATION_BY_KEY,
        ("p", "w", "c", "t"),
        "conversations_by_key",
    ),
    "conversation by message": (
        conversations.SQL_CONVERSATION_BY_MESSAGE,
        ("p", "c", "m"),
        "conversation_links_by_message_id",
    ),
    "newest user turn": (conversations.SQL_NEWEST_USER_TURN, (1,), "messages_by_conversation"),
    "tail page": (conversations.SQL_TAIL_PAGE, (1, 10, 64), "messages_by_conversation"),
    "history from a turn": (conversations.SQL_HISTORY_FROM, (1, 1), "messages_by_conversation"),
    "scope settings": (
        settings.SQL_SCOPES.format("(?, ?)"),
        ("p", "user", "u"),
        "PRIMARY KEY|scope_settings_pkey",
    ),
    "usage of a user": (
        ledger.SQL_USAGE_FOR_USER,
        ("p", "u", "erased-u", "d"),
        "usage_by_user_day|usage_by_day",
    ),
    "slack installation": (
        slack.SQL_FIND_INSTALLATION.format(""),
        ("", "T"),
        "PRIMARY KEY|slack_installations_pkey",
    ),
    "expired oauth states": (slack.SQL_PRUNE_STATES, (0.0,), "oauth_states_by_expiry"),
    "moderation rules": (
        moderation.SQL_RULES,
        ("slack", "T"),
        "PRIMARY KEY|moderation_rules_pkey",
    ),
    "ban": (
        moderation.SQL_BANNED_UNTIL,
        ("slack", "U", 0.0),
        "PRIMARY KEY|moderation_offences_pkey",
    ),
    "refused prompts kept by forget-me": (
        moderation.SQL_KEPT_OFFENCES,
        ("slack", "erased-u", "d"),
        "PRIMARY KEY|moderation_offences_pkey",
    ),
    "saved options": (
        preferences.SQL_OPTIONS,
        ("slack", "U", "C"),
        "PRIMARY KEY|saved_options_pkey",
    ),
    "batch": (preferences.SQL_BATCH, ("b",), "PRIMARY KEY|batches_pkey"),
    "expired batches": (preferences.SQL_PURGE_BATCHES, (0.0,), "batches_by_expiry"),
    "running batches": (preferences.SQL_RUNNING_BATCHES, (), "batches_by_outcome"),
}


@pytest.mark.parametrize("lookup", sorted(LOOKUPS))
async def test_every_lookup_can_use_an_index(store: Store, lookup: str) -> None:
    sql, values, index = LOOKUPS[lookup]

    async def plan(tx: Session) -> list[str]:
        if tx.dialect.name == "sqlite":
            return [
                row["detail"] for row in await tx.fetch_all(f"EXPLAIN QUERY PLAN {sql}", values)
            ]
        await tx.execute("SET LOCAL enable_seqscan = off")
        return [row["QUERY PLAN"] for row in await tx.fetch_all(f"EXPLAIN {sql}", values)]

    steps = await store.db.transaction(plan)
    assert any(name in step for step in steps for name in index.split("|")), steps
    scans = [step for step in steps if step.startswith("SCAN") or "Seq Scan" in step]
    assert all("subquery" in step or "CONSTANT ROW" in step for step in scans), steps
