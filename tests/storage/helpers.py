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
