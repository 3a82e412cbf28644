"""Conversation locks across processes: one holder at a time, waiters served in the order they
asked, and a dead holder's lock freed by the server — the turn that held it goes on to its end
and says the lock was lost (see
:meth:`storage.queries.conversations.ConversationLocks.conversation_lock` for why)."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from storage import StorageError
from storage.postgres import PostgresStore
from storage.queries import conversations as lock_module
from tests.postgres import PostgresCluster
from tests.storage.helpers import until_waiting_for_lock


@pytest.fixture
def url(postgres: PostgresCluster) -> str:
    return postgres.create_schema()


async def test_waiters_get_the_conversation_one_at_a_time_in_the_order_they_asked(
    url: str,
) -> None:
    stores = [await PostgresStore.open(url, pool_size=2) for _ in range(3)]
    order: list[str] = []
    inside = 0
    try:

        async def turn(store: PostgresStore, name: str) -> None:
            nonlocal inside
            async with store.conversation_locks.conversation_lock(7):
                inside += 1
                assert inside == 1
                order.append(name)
                await asyncio.sleep(0.05)
                inside -= 1

        async with stores[0].conversation_locks.conversation_lock(7):
            tasks = []
            for n, store in enumerate(stores):
                tasks.append(asyncio.create_task(turn(store, f"turn {n}")))
                await until_waiting_for_lock(url, "genbot.conversation.7", n + 1)
        await asyncio.gather(*tasks)
        assert order == ["turn 0", "turn 1", "turn 2"]
        async with (
            stores[1].conversation_locks.conversation_lock(8),
            stores[2].conversation_locks.conversation_lock(9),
        ):
            pass
    finally:
        for store in stores:
            await store.close()


async def test_a_dead_holders_lock_is_freed_and_a_turn_that_lost_it_ends_saying_so(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with await PostgresStore.open(url) as survivor:
        holder = await PostgresStore.open(url)
        held = asyncio.Event()
        release = asyncio.Event()

        async def hold() -> None:
            async with holder.conversation_locks.conversation_lock(3):
                held.set()
                await release.wait()

        task = asyncio.create_task(hold())
        await held.wait()
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks"
                " WHERE locktype = 'advisory' AND granted"
            )
        async with asyncio.timeout(10), survivor.conversation_locks.conversation_lock(3):
            pass
        release.set()
        await task
        await holder.close()
    assert "a conversation lock's connection failed while it was held" in caplog.text


async def test_waiting_too_long_is_a_storage_error(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lock_module, "LOCK_WAIT_SECONDS", 0.2)
    async with await PostgresStore.open(url) as first, await PostgresStore.open(url) as second:
        async with first.conversation_locks.conversation_lock(5):
            with pytest.raises(StorageError, match="stayed busy"):
                async with second.conversation_locks.conversation_lock(5):
                    pass
        async with second.conversation_locks.conversation_lock(5):
            pass
