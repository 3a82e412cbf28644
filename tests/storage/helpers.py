"""Test-only storage helpers: what tests need to set up or inspect, kept off the interfaces."""

from __future__ import annotations

import asyncio
import sys

import psycopg

from storage import (
    ChatMessage,
    ConversationStore,
    Job,
    JobAdmission,
    JobMessage,
    JobQuota,
    NewJob,
    QuotaRefusal,
    Store,
)

SQL_LOCK_WAITERS = (
    "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1"
    " AND ((classid::bigint << 32) | objid::bigint) = hashtextextended(%s, 0)"
)
SQL_MESSAGES_OF_JOB = (
    "SELECT platform, channel_id, message_id, job_id, kind FROM job_messages"
    " WHERE job_id = ? ORDER BY id"
)


async def create_job(store: JobAdmission, new: NewJob) -> Job:
    """Create ``new`` with no limits (a derivative whose pair exists: the existing job)."""
    outcome = await store.create_job_within(new, JobQuota())
    assert not isinstance(outcome, QuotaRefusal)
    return outcome[0]


async def conversation_history(store: ConversationStore, conversation_id: int) -> list[ChatMessage]:
    """Every turn of a conversation, oldest first."""
    return await store.conversation_tail(conversation_id, max_tokens=sys.maxsize)


async def messages_for_job(store: Store, job_id: str) -> list[JobMessage]:
    """Every platform message linked to a job, in link order."""
    return [JobMessage(**row) for row in await store.db.fetch_all(SQL_MESSAGES_OF_JOB, (job_id,))]


async def until_waiting_for_lock(url: str, key: str, count: int = 1) -> None:
    """Until ``count`` sessions wait on the PostgreSQL server at ``url`` for the lock of ``key``
    (a conversation's is ``genbot.conversation.<id>``): what orders their turns, seen on the
    server instead of guessed with sleeps. At most 30 s."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        async with asyncio.timeout(30):
            while True:
                found = await (await conn.execute(SQL_LOCK_WAITERS, (key,))).fetchone()
                if found is not None and found[0] >= count:
                    return
                await asyncio.sleep(0.01)


async def tables(store: Store) -> list[str]:
    if store.db.dialect.name == "sqlite":
        sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    else:
        sql = (
            "SELECT table_name AS name FROM information_schema.tables"
            " WHERE table_schema = current_schema()"
        )
    return sorted(str(row["name"]) for row in await store.db.fetch_all(sql))


async def columns(store: Store, table: str) -> list[str]:
    if store.db.dialect.name == "sqlite":
        return [str(row["name"]) for row in await store.db.fetch_all(f"PRAGMA table_info({table})")]
    sql = (
        "SELECT column_name AS name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = ?"
    )
    return [str(row["name"]) for row in await store.db.fetch_all(sql, (table,))]


async def rows_naming(store: Store, text: str) -> dict[str, int]:
    """Per table of ``store``'s database, the rows with ``text`` in any column (read as text:
    JSON and blobs included), where there are any."""
    found: dict[str, int] = {}
    for table in await tables(store):
        names = await columns(store, table)
        where = " OR ".join(f"CAST({name} AS TEXT) LIKE ?" for name in names)
        row = await store.db.fetch_one(
            f"SELECT COUNT(*) AS n FROM {table} WHERE {where}", [f"%{text}%"] * len(names)
        )
        if row is not None and int(row["n"]):
            found[table] = int(row["n"])
    return found
