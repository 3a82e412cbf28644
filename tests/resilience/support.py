"""A whole genbot in-process for the resilience tests: ``build_core`` (every feature) on a tmp
SQLite database, the provider simulator over HTTP, and the in-process :class:`FakePlatform`
(plus, on request, the real web playground adapter).

Every secret a test genbot holds is a distinctive string from :data:`SECRETS`, so any test can
scan what it captured (log records, subprocess output) for them.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Collection, Iterable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from adapters.web.adapter import WebAdapter
from adapters.web.settings import WebSettings
from adapters.webhook import WebhookReceiver
from bot.api import ProviderClient, RetryPolicy
from bot.kernel import (
    ApiSettings,
    LimitsSettings,
    Place,
    Plan,
    PlatformProfile,
    StorageSettings,
    Surface,
    WebhookSettings,
)
from bot.router import Router
from genbot.compose import JobEngines, build_core, webhook_receiver
from genbot.demo import free_port
from genbot.settings import Settings
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from storage import ALL_STATUSES, Job, JobStatus, SqliteStore
from tests.fakes.platform import FakePlatform

API_KEY = "sk-resilience-API-4e1f9a7c2b"
FREE_API_KEY = "sk-resilience-FREE-8d3b6c0e5a"
DISCORD_TOKEN = "MTresilience.DISCORD.token-5c9e2a"
SLACK_BOT_TOKEN = "xoxb-resilience-BOT-7a2d4f"
SLACK_APP_TOKEN = "xapp-resilience-APP-3b8e1c"
SLACK_SIGNING_SECRET = "resilience-SIGNING-secret-6f0a9d"
SECRETS: tuple[str, ...] = (
    API_KEY,
    FREE_API_KEY,
    DISCORD_TOKEN,
    SLACK_BOT_TOKEN,
    SLACK_APP_TOKEN,
    SLACK_SIGNING_SECRET,
)
"""Every secret the resilience tests give genbot; none may ever appear in a log line."""

PLACE = Place("fake", "w1", "c1")
ROOMY = PlatformProfile(edits_per_window_per_channel=1000, edit_window_seconds=1.0)
FAST_RETRY = RetryPolicy(max_attempts=5, max_total_seconds=8.0, base_delay=0.01, max_delay=0.05)
FAST_LIMITS: dict[str, Any] = {
    "poll_interval_min": 0.02,
    "poll_interval_max": 0.2,
    "max_concurrent_jobs_per_user": 100,
    "daily_credit_budget_per_user": 100_000,
}
SETTLED: frozenset[JobStatus] = frozenset({"posted", "failed_posted", "create_failed"})
GENERIC_FAILURE = "something went wrong"
"""The start of the core's (and the web adapter's) answer to an unexpected exception."""


def sim_config(**overrides: Any) -> SimulatorConfig:
    """A fast simulator that knows the resilience API keys."""
    values: dict[str, Any] = {
        "api_key": API_KEY,
        "free_api_key": FREE_API_KEY,
        "time_scale": 0.003,
        "insecure_webhooks": True,
        "slow_seconds": 0.2,
    }
    return SimulatorConfig(**(values | overrides))


def genbot_settings(
    sim: RunningSimulator,
    db_path: Path,
    *,
    plan: Plan = "developer",
    webhooks: bool = False,
    limits: Mapping[str, Any] | None = None,
) -> Settings:
    """Settings of a test genbot: the simulator as provider, fast polling, roomy caps;
    webhooks on a free loopback port when ``webhooks``."""
    hook = WebhookSettings()
    if webhooks:
        port = free_port()
        hook = WebhookSettings(
            public_url=f"http://127.0.0.1:{port}", port=port, allow_insecure_loopback=True
        )
    return Settings(
        api=ApiSettings(
            base_url=sim.base_url,
            key=SecretStr(FREE_API_KEY if plan == "free" else API_KEY),
            plan=plan,
            connect_timeout=2.0,
            read_timeout=5.0,
            stream_idle_timeout=3.0,
        ),
        storage=StorageSettings(path=db_path),
        webhook=hook,
        limits=LimitsSettings(**(FAST_LIMITS | dict(limits or {}))),
    )


@dataclass
class Genbot:
    """A running in-process genbot and what surrounds it."""

    sim: RunningSimulator
    settings: Settings
    store: SqliteStore
    provider: ProviderClient
    core: Router
    jobs: JobEngines
    platform: FakePlatform
    web: WebAdapter | None = None
    receiver: WebhookReceiver | None = None

    async def all_jobs(self) -> list[Job]:
        """Every job, oldest first."""
        return await self.store.tracking.list_unfinished_jobs(ALL_STATUSES)

    async def settle(self, job_ids: Iterable[str], timeout: float = 20.0) -> list[Job]:
        """The jobs once each is posted, reported or refused (bounded wait)."""
        return [await self.jobs.watch.wait(job_id, SETTLED, timeout) for job_id in job_ids]


@asynccontextmanager
async def running_genbot(
    sim: RunningSimulator,
    db_path: Path,
    *,
    plan: Plan = "developer",
    webhooks: bool = False,
    limits: Mapping[str, Any] | None = None,
    with_web: bool = False,
) -> AsyncIterator[Genbot]:
    """A started genbot on ``db_path`` talking to ``sim`` through the fake platform (and the
    web playground on a free port when ``with_web``)."""
    settings = genbot_settings(sim, db_path, plan=plan, webhooks=webhooks, limits=limits)
    async with AsyncExitStack() as stack:
        store = await SqliteStore.open(db_path)
        stack.push_async_callback(store.close)
        provider = ProviderClient(
            settings.api,
            retry=FAST_RETRY,
            allow_insecure_webhooks=settings.webhook.allow_insecure_loopback,
        )
        stack.push_async_callback(provider.aclose)
        platform = FakePlatform(profile=ROOMY)
        web = WebAdapter(WebSettings(enabled=True, port=0), settings.limits) if with_web else None
        surfaces: list[Surface] = [platform, *([web.surface] if web is not None else [])]
        core, jobs = build_core(settings, store, provider, surfaces)
        if web is not None:
            await web.start(core)
            stack.push_async_callback(web.stop)
        await core.start()
        stack.push_async_callback(core.stop)
        receiver = webhook_receiver(settings, jobs)
        if receiver is not None:
            await receiver.start()
            stack.push_async_callback(receiver.stop)
        yield Genbot(sim, settings, store, provider, core, jobs, platform, web, receiver)


@asynccontextmanager
async def genbot_stack(
    tmp_path: Path, *, config: SimulatorConfig | None = None, **options: Any
) -> AsyncIterator[Genbot]:
    """A fresh simulator and a genbot on ``tmp_path / "genbot.db"`` (see :func:`running_genbot`)."""
    async with (
        serve(config or sim_config()) as sim,
        running_genbot(sim, tmp_path / "genbot.db", **options) as bot,
    ):
        yield bot


def error_records(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Log lines at ERROR or above, and any line carrying an exception traceback."""
    return [
        f"{record.name}: {record.getMessage()}"
        for record in caplog.records
        if record.levelno >= logging.ERROR or record.exc_info is not None
    ]


def leaked_secrets(lines: Iterable[str], secrets: Collection[str] = SECRETS) -> list[str]:
    """The lines that contain any of ``secrets`` (empty when nothing leaked)."""
    return [line for line in lines if any(secret in line for secret in secrets)]


def record_lines(records: Iterable[logging.LogRecord]) -> list[str]:
    """Captured records as text: message (arguments applied), traceback and stack."""
    lines = []
    for record in records:
        text = record.getMessage()
        if record.exc_info is not None:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        if record.stack_info:
            text += "\n" + record.stack_info
        lines.append(f"{record.name}: {text}")
    return lines
