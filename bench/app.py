"""A whole genbot in-process for the tracking and load benchmarks, wired as the CLI wires it:
one store, one provider client, one :class:`~bot.outbox.Outbox`, the job engines and
(optionally) the chat engine, behind a :class:`~bot.router.Router` answering on a
:class:`bench.platform.BenchPlatform`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from bench.platform import BenchPlatform
from bot.api import ProviderClient
from bot.features.chat import ChatEngine
from bot.features.chat.engine import ChatStorage
from bot.features.chat.tokens import warm_up
from bot.features.chat.tools import ChatImageTools
from bot.kernel import (
    ApiSettings,
    LimitsSettings,
    PlatformProfile,
    StorageSettings,
    SurfaceRegistry,
    WebhookSettings,
)
from bot.outbox import Outbox
from bot.refs import Refs, RefStorage
from bot.router import Lifecycle, Router
from genbot.compose import JobEngines, build_job_engines, webhook_receiver
from genbot.demo import free_port
from genbot.settings import Settings
from storage import SqliteStore

ROOMY = PlatformProfile(max_text=2000, edits_per_window_per_channel=100_000, edit_window_seconds=1)
"""A platform profile whose windows never bind: the job benchmarks measure the provider side."""


@dataclass
class BenchBot:
    """A running genbot and its parts."""

    settings: Settings
    store: SqliteStore
    provider: ProviderClient
    outbox: Outbox
    jobs: JobEngines
    core: Router
    platform: BenchPlatform
    chat: ChatEngine | None


def bench_settings(
    base_url: str, db_path: Path, *, poll_interval: float, webhooks: bool
) -> Settings:
    """Settings: no per-user caps or budgets (one benchmark user may run many jobs), the
    tracker's interval from ``poll_interval`` up to 10× it, webhooks on a free loopback port."""
    hook = WebhookSettings()
    if webhooks:
        port = free_port()
        hook = WebhookSettings(
            public_url=f"http://127.0.0.1:{port}",
            host="127.0.0.1",
            port=port,
            allow_insecure_loopback=True,
        )
    return Settings(
        api=ApiSettings(base_url=base_url, key=SecretStr("sim-key"), read_timeout=60.0),
        storage=StorageSettings(path=db_path),
        webhook=hook,
        limits=LimitsSettings(
            max_concurrent_jobs_per_user=0,
            daily_credit_budget_per_user=0,
            poll_interval_min=poll_interval,
            poll_interval_max=poll_interval * 10,
        ),
    )


@asynccontextmanager
async def running_bot(
    base_url: str,
    db_path: Path,
    *,
    platform: BenchPlatform,
    poll_interval: float = 1.0,
    webhooks: bool = False,
    tracker: bool = True,
    chat: bool = False,
) -> AsyncIterator[BenchBot]:
    """A started genbot; ``tracker=False`` leaves the tracker's polling loop off (the
    per-task polling baseline drives :meth:`bot.features.jobs.Tracker.apply_task_record` itself).
    With ``chat`` the tokenizer is loaded at start, off the event loop
    (:func:`bot.features.chat.tokens.warm_up`)."""
    settings = bench_settings(base_url, db_path, poll_interval=poll_interval, webhooks=webhooks)
    async with AsyncExitStack() as stack:
        store = await SqliteStore.open(db_path)
        stack.push_async_callback(store.close)
        provider = ProviderClient(
            settings.api, allow_insecure_webhooks=settings.webhook.allow_insecure_loopback
        )
        stack.push_async_callback(provider.aclose)
        surfaces = SurfaceRegistry([platform])
        outbox = Outbox(surfaces)
        jobs = build_job_engines(settings, store, provider, outbox)
        tools = ChatImageTools(jobs.chat_jobs)
        engine = None
        if chat:
            await asyncio.to_thread(warm_up)
            storage = ChatStorage(
                store.conversations, store.conversation_locks, store.settings, store.ledger
            )
            engine = ChatEngine(storage, provider, outbox, tools=tools)
        features = [*jobs.features, *([engine] if engine is not None else [])]
        services: Sequence[Lifecycle] = [
            service for service in jobs.services if tracker or service is not jobs.tracker
        ]
        receiver = webhook_receiver(settings, jobs)
        listeners: list[Lifecycle] = [receiver] if receiver is not None else []
        core = Router(
            outbox,
            features,
            engine,
            [*services, *listeners],
            refs=Refs(
                RefStorage(store.jobs, store.message_links, store.conversations, store.preferences)
            ),
        )
        await core.start()
        stack.push_async_callback(core.stop)
        yield BenchBot(settings, store, provider, outbox, jobs, core, platform, engine)
