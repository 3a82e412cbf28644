"""The worker thread: SQLite runs off the event loop, on one thread, and closing is orderly."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from sqlite_utils import Database

from storage import ConversationKey, SqliteStore, StorageError, StoreClosedError
from storage.sqlite.database import WORKER_THREAD_PREFIX
from tests.storage.conftest import new_job
from tests.storage.helpers import create_job


async def test_every_statement_runs_on_the_one_worker_thread(store: SqliteStore) -> None:
    threads: set[tuple[int, str]] = set()

    def trace_statements(db: Database) -> tuple[int, str]:
        db.conn.set_trace_callback(
            lambda _sql: threads.add((threading.get_ident(), threading.current_thread().name))
        )
        return threading.get_ident(), threading.current_thread().name

    worker = await store.db.run(trace_statements)
    job = await create_job(store.admission, new_job())
    await create_job(store.admission, new_job(parent_job_id=job.id, action="reroll"))
    await store.jobs.transition(job.id, "creating", "submitted", provider_id="p")
    await store.jobs.get_job(job.id)
    await store.message_links.link_message("discord", "c1", "m1", job.id)
    await store.message_links.job_for_message("discord", "c1", "m1")
    await store.tracking.list_unfinished_jobs()
    conversation, _ = await store.conversations.get_or_create_conversation(
        ConversationKey("web", "", "s1"), kind="dm"
    )
    await store.conversations.append_message(
        conversation.id, "user", "hi", platform_message_ids=["w1"]
    )
    await store.conversations.conversation_tail(conversation.id, max_tokens=100)
    await store.settings.set_scope_settings("user", "web", "u", model="llm-4")
    await store.settings.effective_settings("web", user_id="u", channel_id="s1", workspace_id=None)
    await store.ledger.add_usage("web", "u", credits=1)
    await store.ledger.usage_for_user("web", "u")
    await store.dedupe.remember_event("web", "e1")

    assert threads == {worker}
    assert worker[0] != threading.get_ident()
    assert worker[1].startswith(WORKER_THREAD_PREFIX)


async def test_the_loop_keeps_running_while_the_database_is_busy(store: SqliteStore) -> None:
    loop = asyncio.get_running_loop()
    started = asyncio.Event()
    release = threading.Event()

    def hold_the_worker(db: Database) -> str:
        loop.call_soon_threadsafe(started.set)
        release.wait(10)
        return "released"

    holder = asyncio.create_task(store.db.run(hold_the_worker))
    queued_read = asyncio.create_task(store.jobs.get_job("anything"))
    async with asyncio.timeout(10):
        await started.wait()
        assert await asyncio.create_task(asyncio.sleep(0, result="free")) == "free"
        assert not holder.done() and not queued_read.done()
        release.set()
        assert await holder == "released"
        assert await queued_read is None


async def test_close_finishes_queued_writes_then_refuses_calls(db_path: Path) -> None:
    store = await SqliteStore.open(db_path)
    pending = [asyncio.create_task(create_job(store.admission, new_job())) for _ in range(20)]
    await asyncio.sleep(0)
    await store.close()
    await store.close()
    assert store.db.closed
    async with asyncio.timeout(10):
        created = await asyncio.gather(*pending)
    with pytest.raises(StoreClosedError):
        await store.jobs.get_job("x")

    reopened = await SqliteStore.open(db_path)
    try:
        stored = await reopened.tracking.list_unfinished_jobs()
        assert sorted(job.id for job in stored) == sorted(job.id for job in created)
    finally:
        await reopened.close()


async def test_async_context_manager_closes(db_path: Path) -> None:
    async with await SqliteStore.open(db_path) as store:
        await create_job(store.admission, new_job())
    assert store.db.closed


async def test_a_call_past_the_statement_timeout_is_interrupted(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "slow.db", statement_timeout=0.2)
    long_count = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000000)"
        " SELECT count(*) FROM n"
    )
    try:
        with pytest.raises(StorageError, match="statement_timeout"):
            await store.db.run(lambda db: db.execute(long_count).fetchall())
        assert await store.jobs.get_job("any") is None
    finally:
        await store.close()
