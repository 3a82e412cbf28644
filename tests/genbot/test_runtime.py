"""The runtime's start and stop order: adapters stop before the core (so no event reaches a
stopped core), a failing stop step is logged and does not keep the rest running, a startup
that fails halfway stops everything it had started, and a process whose leases the drain released
is not recorded alive again by the playground's claims while its adapters stop."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from pathlib import Path

import aiohttp
import pytest
from pydantic import SecretStr

from adapters.web.adapter import WebAdapter
from adapters.web.settings import WebSettings
from bot.api import ProviderClient
from bot.kernel import ApiSettings, StorageSettings, WebhookSettings
from genbot.compose import build_core
from genbot.demo import free_port
from genbot.reasons import StartupError
from genbot.runtime import Runtime, running
from genbot.settings import Settings
from storage import SqliteStore, Store
from storage.postgres import PostgresStore
from storage.queries.playground import SQL_ALIVE
from tests.postgres import PostgresCluster
from tests.storage.conftest import new_job
from tests.storage.helpers import create_job


def tracker_running() -> bool:
    return any(
        task.get_name() == "genbot-tracker" and not task.done() for task in asyncio.all_tasks()
    )


class ObservedWebAdapter(WebAdapter):
    """The real playground adapter, noting whether the core still ran when it was stopped, and
    then failing its stop."""

    tracker_running_at_stop: bool | None = None

    async def stop(self) -> None:
        self.tracker_running_at_stop = tracker_running()
        await super().stop()
        raise RuntimeError("the event stream was already closed")


class ClaimingAsItStops(WebAdapter):
    """The real playground adapter, which claims pending commands once more as it is stopped
    (as a sweep under way when genbot began to stop does) and notes whether its process's
    ``processes`` row is there after that claim."""

    store: Store
    alive_after_claim: bool | None = None

    async def stop(self) -> None:
        await self.playground.claim_pending(time.time())
        row = await self.store.db.fetch_one(
            "SELECT id FROM processes WHERE id = ?", (self.store.owner.process_id,)
        )
        self.alive_after_claim = row is not None
        await super().stop()


class LeasingAsItStops(WebAdapter):
    """The real playground adapter, which, as it is stopped (after the drain released the
    leases), creates a job (as the batch queue still may until the core stops) and writes its
    process's ``processes`` row (as a claim whose statement reached the database only after the
    release began may)."""

    store: Store
    job_id: str | None = None

    async def stop(self) -> None:
        self.job_id = (await create_job(self.store.admission, new_job())).id
        now = time.time()
        await self.store.db.execute(SQL_ALIVE, (self.store.owner.process_id, now, now))
        await super().stop()


def runtime_of(store: Store, web: ClaimingAsItStops | LeasingAsItStops) -> Runtime:
    """A runtime with ``web`` as its one adapter and the job tracker, on ``store``."""
    settings = Settings()
    provider = ProviderClient(settings.api)
    web.store = store
    core, jobs = build_core(settings, store, provider, [web.surface])
    return Runtime(settings, store, provider, core, {"web": web}, deliveries=jobs.tracker)


async def refused(url: str) -> bool:
    """Whether nothing listens at ``url`` any more."""
    try:
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            await response.read()
    except aiohttp.ClientConnectorError:
        return True
    return False


async def test_adapters_stop_before_the_core_and_a_failing_stop_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(storage=StorageSettings(path=tmp_path / "genbot.db"))
    store = await SqliteStore.open(settings.storage.path)
    provider = ProviderClient(settings.api)
    web = ObservedWebAdapter(WebSettings(enabled=True, port=0), settings.limits)
    core, _ = build_core(settings, store, provider, [web.surface])
    runtime = Runtime(settings, store, provider, core, {"web": web})
    await runtime.start()
    url = web.url
    assert tracker_running()

    with caplog.at_level(logging.WARNING, logger="genbot"):
        await runtime.stop()

    assert web.tracker_running_at_stop is True
    assert not tracker_running()
    assert await refused(url)
    assert "stopping the web adapter failed: the event stream was already closed" in caplog.text


async def test_a_startup_failing_halfway_stops_what_had_started(tmp_path: Path) -> None:
    web_port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = int(taken.getsockname()[1])
        settings = Settings(
            api=ApiSettings(key=SecretStr("sk-provider-key")),
            storage=StorageSettings(path=tmp_path / "genbot.db"),
            web=WebSettings(enabled=True, port=web_port),
            webhook=WebhookSettings(
                public_url=f"http://127.0.0.1:{busy}", port=busy, allow_insecure_loopback=True
            ),
        )
        with pytest.raises(StartupError) as failure:
            async with running(settings):
                raise AssertionError("genbot started with its webhook port taken")

    assert str(failure.value).startswith(f"the webhook receiver cannot listen on 127.0.0.1:{busy}")
    assert not tracker_running()
    assert await refused(f"http://127.0.0.1:{web_port}/")


async def test_a_database_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    settings = Settings(storage=StorageSettings(path=tmp_path / "a-file" / "genbot.db"))
    with pytest.raises(StartupError) as failure:
        async with running(settings):
            raise AssertionError("genbot started without its database")
    assert str(failure.value).startswith(f"cannot open the database at {settings.storage.path}: ")
    assert str(failure.value).endswith("(check [storage] path)")


async def test_a_claim_while_the_adapters_stop_does_not_record_a_released_process_alive(
    postgres: PostgresCluster,
) -> None:
    """The drain releases the leases before the adapters stop: the playground's sweep, under way
    then, wrote the process's row again, so the others took a stopping process for alive (and
    would have for two leases, had it died before the tracker's stop released again)."""
    store = await PostgresStore.open(postgres.create_database(), pool_size=2)
    web = ClaimingAsItStops(WebSettings(enabled=True, port=0), history=store.playground)
    runtime = runtime_of(store, web)
    await runtime.start()

    await runtime.stop()

    assert web.alive_after_claim is False


async def test_what_leases_or_marks_the_process_alive_while_the_adapters_stop_is_released_too(
    postgres: PostgresCluster,
) -> None:
    """The stop releases the leases twice (the drain's, before the adapters stop, and the
    tracker's, after them): a drain run once would leave a job created while the adapters stop
    leased to the stopped process, and its row alive, for the others to wait on."""
    url = postgres.create_database()
    store = await PostgresStore.open(url, pool_size=2)
    web = LeasingAsItStops(WebSettings(enabled=True, port=0), history=store.playground)
    runtime = runtime_of(store, web)
    await runtime.start()

    await runtime.stop()

    after = await PostgresStore.open(url, pool_size=1)
    try:
        alive = await after.db.fetch_all("SELECT id FROM processes")
        job = await after.db.fetch_one("SELECT lease_until FROM jobs WHERE id = ?", (web.job_id,))
    finally:
        await after.close()
    assert alive == []
    assert job is not None and job["lease_until"] == 0
