"""The running genbot: its lifecycle — storage, provider client, core and every configured adapter
started and stopped in order (the parts are made by :mod:`genbot.compose`).

Parts, in the order they are made: storage, provider client, the configured adapters (built,
not started), the core answering on their surfaces, the webhook receiver. Start order: each
adapter (handing its events to the core from then on), then the core's services (they resume
unfinished jobs and need the adapters to post), then the webhook receiver.

Stop order, within ``[runtime] drain_seconds`` for the first two steps together:
1. every adapter stops taking events (later ones get "restarting, try again in a moment") and
   the events already running — chat streams included — finish;
2. the tracker stops polling and the result deliveries in progress finish;
3. the adapters disconnect, then the webhook receiver and the core's services stop, then the
   provider client and the database close.
What is still running at the deadline is cancelled and resumes at the next start. Each step is
bounded and its failure is logged, never raised, so one broken part cannot keep the others
running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Protocol

from adapters import Adapter, AdapterStartError
from bot.api import ProviderClient
from bot.features.chat.tokens import warm_up
from bot.features.provider_keys import ProviderKeys
from bot.kernel import AdminConsole, ResultGallery, metrics
from bot.router import Lifecycle, Router
from genbot.compose import build_core, configured_adapters, provider_client, webhook_receiver
from genbot.ops import Check, CheckResult, OpsListener, ProviderFreshness
from genbot.reasons import StartupError, os_reason, reason
from genbot.settings import Settings
from genbot.signals import StopSignals
from storage import (
    LATEST_VERSION,
    DatabaseInUse,
    ProcessLock,
    SqliteStore,
    StorageError,
    Store,
)
from storage.postgres import PostgresStore
from storage.sql.server_clock import ServerClock

if TYPE_CHECKING:
    from adapters.web.adapter import WebAdapter

log = logging.getLogger("genbot")

STOP_STEP_TIMEOUT = 20.0
"""Upper bound of each teardown step after the drain (an adapter, the core, the client, the
database)."""
DRAIN_GRACE_SECONDS = 10.0
"""How long past ``drain_seconds`` a drain may take to cancel what it had to cut short."""


class Drainable(Protocol):
    """Work in progress that can be let finish within a deadline (the tracker's deliveries)."""

    async def drain(self, timeout: float) -> None: ...


ADAPTER_TITLES = {"discord": "Discord", "slack": "Slack", "web": "web playground"}


def adapter_failure(name: str, error: BaseException) -> str:
    """What to print when adapter ``name`` failed to start with ``error``."""
    if isinstance(error, AdapterStartError):
        return str(error)
    return f"the {name} adapter could not start: {reason(error)}"


@dataclass
class Runtime:
    """Everything one genbot process runs; built and torn down by :func:`running`."""

    settings: Settings
    store: Store
    provider: ProviderClient
    router: Router
    adapters: dict[str, Adapter] = field(default_factory=dict)
    deliveries: Drainable | None = None
    receiver: Lifecycle | None = None
    ops: OpsListener | None = None
    on_fatal: Callable[[str], None] | None = None
    """Hears, in one line, that a started adapter's connection ended for good."""
    started: bool = field(default=False, init=False)
    stopping: bool = field(default=False, init=False)
    _attempted: list[tuple[str, Adapter]] = field(default_factory=list, init=False, repr=False)
    _core_attempted: bool = field(default=False, init=False, repr=False)
    _receiver_attempted: bool = field(default=False, init=False, repr=False)
    _provider_freshness: ProviderFreshness | None = field(default=None, init=False, repr=False)

    @property
    def web_url(self) -> str:
        """The playground's address; ``KeyError`` when the web adapter is not running."""
        return self._web().url

    @property
    def web_admin_url(self) -> str | None:
        """The playground's admin link (``genbot demo``), if it has one."""
        return self._web().admin_url

    def _web(self) -> WebAdapter:
        from adapters.web.adapter import WebAdapter

        web = self.adapters["web"]
        assert isinstance(web, WebAdapter)
        return web

    async def start(self) -> None:
        """Start the adapters, then the core's services; :class:`StartupError` names the part
        that failed (the traceback is logged at debug level). The tokenizer is loaded first,
        off the event loop, so the first answer does not stall the loop for it."""
        await asyncio.to_thread(warm_up)
        for name, adapter in self.adapters.items():
            self._attempted.append((name, adapter))
            try:
                await adapter.start(self.router, partial(self._connection_ended, name))
            except Exception as error:
                log.debug("the %s adapter failed to start", name, exc_info=error)
                raise StartupError(adapter_failure(name, error)) from error
            log.info("%s adapter started", name)
        self._core_attempted = True
        try:
            await self.router.start()
        except Exception as error:
            log.debug("the core's services failed to start", exc_info=error)
            raise StartupError(f"genbot's tracker could not start: {reason(error)}") from error
        if self.receiver is not None:
            self._receiver_attempted = True
            try:
                await self.receiver.start()
            except Exception as error:
                log.debug("the webhook receiver failed to start", exc_info=error)
                raise StartupError(self._receiver_failure(error)) from error
        self.started = True

    def _connection_ended(self, name: str, error: BaseException) -> None:
        title = ADAPTER_TITLES.get(name, name)
        line = f"the {title} connection ended: {connection_reason(error)}"
        if self.on_fatal is None:
            log.error("%s", line)
        else:
            self.on_fatal(line)

    def readiness_checks(self) -> dict[str, Check]:
        """What ``/readyz`` checks (see :mod:`genbot.ops`)."""
        if self._provider_freshness is None:
            self._provider_freshness = ProviderFreshness(self.provider.transport, self.settings.ops)
        checks: dict[str, Check] = {
            "started": self._started_check,
            "stopping": self._stopping_check,
            "storage": self._storage_check,
            "provider": self._provider_freshness,
        }
        for name, adapter in self.adapters.items():
            checks[name] = partial(_adapter_check, name, adapter)
        return checks

    async def _started_check(self) -> CheckResult:
        return CheckResult(self.started, "started" if self.started else "starting")

    async def _stopping_check(self) -> CheckResult:
        return CheckResult(not self.stopping, "stopping" if self.stopping else "serving")

    async def _storage_check(self) -> CheckResult:
        """The database answers, is at this genbot's schema version and takes a write."""
        version = await self.store.schema_version()
        if version != LATEST_VERSION:
            return CheckResult(False, f"schema version {version}, expected {LATEST_VERSION}")
        try:
            await self.store.probe_write()
        except StorageError as error:
            return CheckResult(False, f"the database takes no writes: {error}")
        return CheckResult(True, f"schema version {version}, writable")

    async def refresh_job_counts(self) -> None:
        """Bring ``genbot_jobs`` up to date (before a scrape)."""
        metrics.set_job_counts(await self.store.tracking.count_unfinished_jobs())

    async def refresh_clock_offset(self) -> None:
        """Bring ``genbot_clock_offset_seconds`` up to date (before a scrape): how far the
        database server's clock, which the store stamps with, is ahead of this host's (on
        PostgreSQL; SQLite's store keeps this host's clock and leaves it at 0)."""
        if isinstance(self.store.clock, ServerClock):
            metrics.set_clock_offset(self.store.clock.ahead_of_host())

    async def refresh_key_usage(self) -> None:
        """Bring ``genbot_provider_key_usage`` up to date (before a scrape)."""
        await ProviderKeys(self.provider.keys, self.store.admission).refresh()

    def _receiver_failure(self, error: Exception) -> str:
        if isinstance(error, OSError) and not isinstance(error, TimeoutError):
            hook = self.settings.webhook
            return (
                f"the webhook receiver cannot listen on {hook.host}:{hook.port} "
                f"({os_reason(error)}); choose another [webhook] port"
            )
        return f"the webhook receiver could not start: {reason(error)}"

    async def stop(self) -> None:
        """Stop what :meth:`start` started or tried to, in the order of the module docstring
        (bounded, never raises). The leases are released twice: by the drain, so the others
        take the jobs over while the adapters stop, and by the tracker's stop once they have
        stopped, for what they leased or wrote alive meanwhile (see ``Tracker.drain``)."""
        await self.drain()
        while self._attempted:
            name, adapter = self._attempted.pop()
            await _quietly(f"stopping the {name} adapter", adapter.stop)
        if self._receiver_attempted and self.receiver is not None:
            self._receiver_attempted = False
            await _quietly("stopping the webhook receiver", self.receiver.stop)
        if self._core_attempted:
            self._core_attempted = False
            await _quietly("stopping the tracker", self.router.stop)
        await _quietly("closing the provider client", self.provider.aclose)
        await _quietly("closing the database", self.store.close)

    async def drain(self) -> None:
        """Take no new events, then let running events and deliveries finish within
        ``[runtime] drain_seconds``."""
        self.stopping = True
        self.router.stop_intake()
        loop = asyncio.get_running_loop()
        seconds = self.settings.runtime.drain_seconds
        deadline = loop.time() + seconds
        bound = seconds + DRAIN_GRACE_SECONDS
        await _quietly("draining the adapters' events", self.router.drain, seconds, bound=bound)
        if self._core_attempted and self.deliveries is not None:
            left = max(deadline - loop.time(), 0.0)
            await _quietly("finishing result deliveries", self.deliveries.drain, left, bound=bound)


def _admin_page(adapters: Mapping[str, Adapter]) -> Callable[[AdminConsole], None] | None:
    """Where the admin page's core goes: the playground, when it runs."""
    from adapters.web.adapter import WebAdapter

    web = adapters.get("web")
    return web.attach_console if isinstance(web, WebAdapter) else None


def _gallery_page(adapters: Mapping[str, Adapter]) -> Callable[[ResultGallery], None] | None:
    """Where the gallery's core goes: the playground, when it runs."""
    from adapters.web.adapter import WebAdapter

    web = adapters.get("web")
    return web.attach_gallery if isinstance(web, WebAdapter) else None


async def _adapter_check(name: str, adapter: Adapter) -> CheckResult:
    if await adapter.connected():
        return CheckResult(True, "connected")
    return CheckResult(False, f"the {name} adapter is not connected")


async def _quietly(
    what: str,
    step: Callable[..., Awaitable[object]],
    *args: object,
    bound: float = STOP_STEP_TIMEOUT,
) -> None:
    try:
        async with asyncio.timeout(bound):
            await step(*args)
    except TimeoutError:
        log.warning("%s took longer than %.0f seconds: left behind", what, bound)
    except Exception as error:
        log.warning(
            "%s failed: %s",
            what,
            reason(error),
            exc_info=error if log.isEnabledFor(logging.DEBUG) else None,
        )


def connection_reason(error: BaseException) -> str:
    """Why an adapter's connection ended, in one line."""
    if isinstance(error, AdapterStartError):
        return str(error)
    return reason(error)


def lock_database(settings: Settings) -> ProcessLock | None:
    """This process's lock on the SQLite database at ``[storage] path``; :class:`StartupError`
    at once when another genbot holds it (or it cannot be taken). None on PostgreSQL, which
    many processes share."""
    if settings.storage.postgres_url is not None:
        return None
    path = settings.storage.path
    try:
        return ProcessLock.acquire(path)
    except DatabaseInUse as error:
        raise StartupError(str(error)) from None
    except OSError as error:
        raise StartupError(
            f"cannot open the database at {path}: {reason(error)} (check [storage] path)"
        ) from error


async def open_store(settings: Settings) -> Store:
    """PostgreSQL at ``[storage] url`` when set, else the SQLite database at ``[storage] path``
    (its folder created); :class:`StartupError` if it cannot be opened."""
    url = settings.storage.postgres_url
    if url is not None:
        try:
            return await PostgresStore.open(
                url,
                pool_size=settings.storage.pool_size,
                lease_seconds=settings.storage.lease_seconds,
                statement_timeout=settings.storage.statement_timeout,
            )
        except StorageError as error:
            raise StartupError(f"{error} (check [storage] url)") from error
    path = settings.storage.path
    try:
        return await SqliteStore.open(
            path,
            lease_seconds=settings.storage.lease_seconds,
            statement_timeout=settings.storage.statement_timeout,
        )
    except (OSError, StorageError, sqlite3.Error) as error:
        raise StartupError(
            f"cannot open the database at {path}: {reason(error)} (check [storage] path)"
        ) from error


@contextlib.asynccontextmanager
async def running(
    settings: Settings, stop: StopSignals | None = None, *, demo: bool = False
) -> AsyncIterator[Runtime]:
    """Start genbot (see the module docstring for the order) and stop it on exit; ``demo``:
    see :func:`configured_adapters`.

    With ``stop``, a stop requested during startup cancels it: what had started is stopped and
    :class:`genbot.signals.StopRequested` is raised; a fatal adapter error calls
    ``stop.fail``. Startup failures raise :class:`StartupError` after the same cleanup.
    """
    lock = lock_database(settings)
    try:
        store = await open_store(settings)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    runtime: Runtime | None = None
    ops: OpsListener | None = None
    provider = provider_client(settings, store)
    try:
        adapters = configured_adapters(settings, demo=demo, storage=store)
        surfaces = [adapter.surface for adapter in adapters.values()]
        router, jobs = build_core(
            settings,
            store,
            provider,
            surfaces,
            open_channels=settings.open_channels(),
            shards=settings.discord.shards(),
            on_console=_admin_page(adapters),
            on_gallery=_gallery_page(adapters),
        )
        runtime = Runtime(
            settings,
            store,
            provider,
            router,
            adapters,
            deliveries=jobs.tracker,
            receiver=webhook_receiver(settings, jobs),
            on_fatal=stop.fail if stop is not None else None,
        )
        if settings.ops.enabled:
            ops = OpsListener(
                settings.ops,
                runtime.readiness_checks,
                [
                    runtime.refresh_job_counts,
                    runtime.refresh_key_usage,
                    runtime.refresh_clock_offset,
                ],
            )
            runtime.ops = ops
            await ops.start()
        if stop is None:
            await runtime.start()
        else:
            await stop.interrupting(runtime.start())
        yield runtime
    finally:
        if runtime is not None:
            await runtime.stop()
        else:
            await _quietly("closing the provider client", provider.aclose)
            await _quietly("closing the database", store.close)
        if ops is not None:
            await _quietly("stopping the ops listener", ops.stop)
        if lock is not None:
            lock.release()
