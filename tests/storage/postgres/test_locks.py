"""Conversation locks across processes: one holder at a time, waiters served in the order they
asked; a holder whose connection fails (its backend terminated, the server restarted) says so
and holds its lock again at once, after whoever took it meanwhile (see
:meth:`storage.queries.conversations.ConversationLocks.conversation_lock`), and the lock is free
once its turn ends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest

from storage import StorageError
from storage.postgres import PostgresStore
from storage.queries import conversations as lock_module
from tests.postgres import PostgresCluster, cluster_or_skip
from tests.storage.helpers import (
    cut_lock_holders,
    lock_holders,
    until_lock_held_again,
    until_waiting_for_lock,
)


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


@asynccontextmanager
async def held_by(store: PostgresStore, conversation_id: int) -> AsyncIterator[asyncio.Event]:
    """Hold the conversation's lock in a task of its own (a turn under way) until the block
    ends; the event given is set once it is held."""
    held, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with store.conversation_locks.conversation_lock(conversation_id):
            held.set()
            await release.wait()

    task = asyncio.create_task(hold())
    try:
        async with asyncio.timeout(10):
            await held.wait()
        yield held
    finally:
        release.set()
        await task


async def a_turn_waits(store: PostgresStore, conversation_id: int) -> None:
    """Another process's turn of the conversation cannot have it now."""
    with pytest.raises(StorageError, match="stayed busy"):
        async with store.conversation_locks.conversation_lock(conversation_id, wait=0.2):
            pass


async def test_a_holder_whose_connection_was_cut_holds_its_lock_again_until_its_turn_ends(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with await PostgresStore.open(url) as holder, await PostgresStore.open(url) as other:
        async with held_by(holder, 3):
            cut = cut_lock_holders(url, "genbot.conversation.3")
            assert len(cut) == 1
            await until_lock_held_again(url, "genbot.conversation.3", cut)
            await a_turn_waits(other, 3)
        async with asyncio.timeout(10), other.conversation_locks.conversation_lock(3):
            pass
        async with asyncio.timeout(10), holder.conversation_locks.conversation_lock(3):
            pass
    assert "a conversation lock's connection failed while it was held" in caplog.text
    assert "a conversation lock is held again after its connection failed" in caplog.text


async def test_a_holder_whose_lock_went_to_a_waiter_meanwhile_holds_it_after_that_turn(
    url: str,
) -> None:
    key = "genbot.conversation.4"
    async with (
        await PostgresStore.open(url) as holder,
        await PostgresStore.open(url) as other,
        await PostgresStore.open(url) as third,
    ):
        async with held_by(holder, 4):
            inside = asyncio.Event()
            done = asyncio.Event()

            async def waiter() -> None:
                async with other.conversation_locks.conversation_lock(4, wait=10):
                    inside.set()
                    await done.wait()

            waiting = asyncio.create_task(waiter())
            await until_waiting_for_lock(url, key)
            cut = cut_lock_holders(url, key)
            async with asyncio.timeout(10):
                await inside.wait()
            await until_waiting_for_lock(url, key)
            done.set()
            await waiting
            await until_lock_held_again(url, key, cut)
            await a_turn_waits(third, 4)
        async with asyncio.timeout(10), third.conversation_locks.conversation_lock(4):
            pass


@pytest.fixture(scope="module")
def restarted() -> Iterator[PostgresCluster]:
    """A cluster of this module's own, which its tests restart."""
    yield from cluster_or_skip()


async def test_a_lock_held_across_a_server_restart_is_held_again_once_the_server_is_back(
    restarted: PostgresCluster,
) -> None:
    url, key = restarted.create_schema(), "genbot.conversation.5"
    async with await PostgresStore.open(url) as holder, await PostgresStore.open(url) as other:
        async with held_by(holder, 5):
            before = lock_holders(url, key)
            await asyncio.to_thread(restarted.restart)
            await until_lock_held_again(url, key, before)
            await a_turn_waits(other, 5)
        async with asyncio.timeout(10), other.conversation_locks.conversation_lock(5):
            pass


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
