"""Test-only storage helpers: what tests need to set up or inspect, kept off the interfaces."""

from __future__ import annotations

import sys

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
