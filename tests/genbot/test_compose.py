"""``[api] chat_requests_per_minute`` over several processes: the pacers of two genbot
processes on one PostgreSQL database count each other's requests."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pydantic import SecretStr

from adapters.slack.adapter import SlackAdapter
from adapters.slack.settings import SlackSettings
from adapters.web import WebAdapter
from adapters.web.settings import WebSettings
from bot.api import ProviderClient, ProviderRateLimited
from bot.api.ratelimit import RequestPacer
from bot.features.console import Console
from bot.kernel import User
from genbot.compose import build_core, configured_adapters, shared_chat_pacing
from storage import SqliteStore
from storage.postgres import PostgresStore
from tests.bot.harness import ROOMY, harness_settings
from tests.fakes.platform import FakePlatform
from tests.postgres import PostgresCluster
from tests.storage.conftest import START

ADMIN = User("root", is_admin=True)


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


async def test_the_core_stamps_and_compares_stored_times_on_the_stores_clock(
    tmp_path: Path,
) -> None:
    """The job machinery and the admin page read ``time.time`` while the store stamped with its
    own clock, on PostgreSQL the database server's: a host whose wall clock is off the server's
    judged every lease, due poll and live process wrongly."""
    store = await SqliteStore.open(tmp_path / "genbot.db", clock=lambda: START)
    settings = harness_settings("http://127.0.0.1:9", tmp_path / "unused.db", webhooks=False)
    consoles: list[Console] = []
    try:
        async with ProviderClient(settings.api) as provider:
            surfaces = [FakePlatform(profile=ROOMY)]
            _, jobs = build_core(settings, store, provider, surfaces, on_console=consoles.append)
            info = jobs.tracker.leases.process_info()
            assert info.started_at == START
            await store.leasing.heartbeat(info)
            overview = await consoles[0].overview(ADMIN, "fake", "w1", {})
            assert [process["live"] for process in overview["cluster"]["processes"]] == [True]
    finally:
        await store.close()


async def test_the_playground_dates_its_messages_on_the_stores_clock(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "genbot.db", clock=lambda: START)
    settings = harness_settings("http://127.0.0.1:9", tmp_path / "genbot.db", webhooks=False)
    settings = settings.model_copy(update={"web": WebSettings(enabled=True, port=0)})
    try:
        web = configured_adapters(settings, storage=store)["web"]
        assert isinstance(web, WebAdapter) and web.playground.clock() == START
    finally:
        await store.close()


async def test_slack_oauth_states_are_dated_on_the_stores_clock(tmp_path: Path) -> None:
    """An OAuth state was dated on this host's wall clock and checked on the store's (on
    PostgreSQL the database server's): a host ten minutes behind it refused every install."""
    store = await SqliteStore.open(tmp_path / "genbot.db", clock=lambda: time.time() + 3600)
    settings = harness_settings("http://127.0.0.1:9", tmp_path / "genbot.db", webhooks=False)
    oauth = SlackSettings(
        client_id="1.2", client_secret=SecretStr("shh"), signing_secret=SecretStr("sig")
    )
    settings = settings.model_copy(update={"slack": oauth})
    try:
        slack = configured_adapters(settings, storage=store)["slack"]
        assert isinstance(slack, SlackAdapter) and slack.distribution is not None
        states = slack.distribution.states
        assert await states.async_consume(await states.async_issue())
    finally:
        await store.close()
