"""The running genbot: storage, provider client, core and every configured adapter."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

from bot.api import ProviderClient
from bot.assembly import build_core
from bot.config import Settings
from bot.core import Core
from bot.events import Surface
from storage import Store

log = logging.getLogger("genbot")


class Adapter(Protocol):
    """What every platform adapter offers the runtime."""

    @property
    def surface(self) -> Surface: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass
class Runtime:
    """Everything one genbot process runs; built and torn down by :func:`running`."""

    settings: Settings
    store: Store
    provider: ProviderClient
    core: Core
    adapters: dict[str, Adapter] = field(default_factory=dict)

    @property
    def web_url(self) -> str:
        """The playground's address; ``KeyError`` when the web adapter is not running."""
        from adapters.web.adapter import WebAdapter

        web = self.adapters["web"]
        assert isinstance(web, WebAdapter)
        return web.url


def configured_adapters(settings: Settings, core: Core) -> dict[str, Adapter]:
    """The adapters whose credentials (or switch) are set, created but not started."""
    adapters: dict[str, Adapter] = {}
    if settings.discord.token.get_secret_value():
        from adapters.discord.adapter import DiscordAdapter

        adapters["discord"] = DiscordAdapter(settings.discord, settings.limits, core)
    if settings.slack.bot_token.get_secret_value():
        from adapters.slack.adapter import SlackAdapter

        adapters["slack"] = SlackAdapter(settings.slack, settings.limits, core)
    if settings.web.enabled:
        from adapters.web.adapter import WebAdapter

        adapters["web"] = WebAdapter(settings.web, core, settings.limits)
    return adapters


@contextlib.asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[Runtime]:
    """Open storage, start the adapters, then the core's services (which resume unfinished jobs
    and need the adapters to post); stop everything in reverse order."""
    settings.storage.path.parent.mkdir(parents=True, exist_ok=True)
    store = await Store.open(settings.storage.path)
    provider = ProviderClient(
        settings.api, allow_insecure_webhooks=settings.webhook.allow_insecure_loopback
    )
    core, _ = build_core(settings, store, provider)
    runtime = Runtime(settings, store, provider, core, configured_adapters(settings, core))
    started: list[Adapter] = []
    core_started = False
    try:
        for name, adapter in runtime.adapters.items():
            core.attach(adapter.surface)
            await adapter.start()
            started.append(adapter)
            log.info("%s adapter started", name)
        await core.start()
        core_started = True
        yield runtime
    finally:
        if core_started:
            await core.stop()
        for adapter in reversed(started):
            with contextlib.suppress(Exception):
                await adapter.stop()
        await provider.aclose()
        await store.close()


async def wait_for_stop_signal() -> None:
    """Return on SIGINT or SIGTERM."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
