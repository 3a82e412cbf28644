"""``[api] chat_requests_per_minute`` over several processes: the pacers of two genbot
processes on one PostgreSQL database count each other's requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.api import ProviderRateLimited
from bot.api.ratelimit import RequestPacer
from genbot.compose import shared_chat_pacing
from storage import SqliteStore
from storage.postgres import PostgresStore
from tests.postgres import PostgresCluster


async def test_two_processes_together_send_what_the_limit_allows(
    postgres: PostgresCluster,
) -> None:
    url = postgres.create_schema()
    first_store = await PostgresStore.open(url, pool_size=2)
    second_store = await PostgresStore.open(url, pool_size=2)
    try:
        first = RequestPacer(2, shared=shared_chat_pacing(first_store.write_windows))
        second = RequestPacer(2, shared=shared_chat_pacing(second_store.write_windows))
        await first.acquire(max_wait=1.0)
        await second.acquire(max_wait=1.0)

        # this process sent one of its two, but the other process sent the second
        with pytest.raises(ProviderRateLimited):
            await first.acquire(max_wait=1.0)
    finally:
        await first_store.close()
        await second_store.close()


async def test_a_process_alone_on_its_database_paces_by_its_own_count(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "genbot.db")
    try:
        pacer = RequestPacer(2, shared=shared_chat_pacing(store.write_windows))
        await pacer.acquire(max_wait=1.0)
        await pacer.acquire(max_wait=1.0)
        with pytest.raises(ProviderRateLimited):
            await pacer.acquire(max_wait=1.0)
    finally:
        await store.close()
