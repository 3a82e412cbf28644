"""genbot's real core (``build_core``) behind the real Discord adapter, against the fake Discord
and the provider simulator over HTTP.

``real_genbot(harness, sim, db_path)`` opens the store, the provider client and the core with
every feature, attaches a started :class:`DiscordAdapter` and starts the core's services; on exit
it stops them in reverse order. A test restarts genbot by leaving one block and entering
another on the same simulator, database and fake — a new process in all but the interpreter.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from adapters.discord import DiscordAdapter
from bot.api import ProviderClient, RetryPolicy
from bot.api.settings import KeySettings
from bot.kernel import (
    ApiSettings,
    LimitsSettings,
    Plan,
    PromptsSettings,
    StorageSettings,
    WebhookSettings,
)
from bot.router import Router
from genbot.compose import JobEngines, build_core, webhook_receiver
from genbot.demo import free_port
from genbot.settings import Settings
from simulator.server import RunningSimulator
from simulator.state import RecordedRequest
from storage import ALL_STATUSES, Job, JobStatus, SqliteStore
from storage.postgres import PostgresStore
from tests.adapters.discord.harness import Harness
from tests.fakes.discord import FakeChannel, FakeDiscord, FakeMessage, FakeUser

FAST_RETRY = RetryPolicy(max_attempts=4, max_total_seconds=5.0, base_delay=0.01, max_delay=0.05)
FAST_POLLING: dict[str, Any] = {"poll_interval_min": 0.01, "poll_interval_max": 0.1}
QUICK_WINDOW = 1.0
QUICK_BUCKET: dict[str, Any] = {"bucket_window": QUICK_WINDOW, "advertise_rate_limits": False}
"""Fake Discord options for tests whose subject is not the write window: Discord's bucket of 5
message writes per channel in a 1-second window (give genbot the same window with
``edit_window_seconds=QUICK_WINDOW``), without rate-limit headers, so only genbot's own
windows avoid 429s — and tests wait less for them."""
MARKER = "▌"
"""The renderer's in-progress marker: only interim versions of a streamed answer carry it."""


def core_settings(
    harness: Harness,
    sim: RunningSimulator,
    db_path: Path,
    *,
    edit_window_seconds: float | None = None,
    plan: Plan = "developer",
    webhooks: bool = False,
    diffusion_models: tuple[str, ...] = (),
    keys: tuple[KeySettings, ...] = (),
    prompts: PromptsSettings | None = None,
    **limits: Any,
) -> Settings:
    """Settings of a test genbot: the simulator as provider, fast polling;
    ``edit_window_seconds``: the ``[discord]`` edit window genbot keeps to; ``plan`` and
    ``diffusion_models``: the ``[api]`` ones; ``keys``: ``[[api.keys]]`` instead of the
    simulator's one key; ``webhooks``: the receiver on a loopback port (the
    simulator must admit insecure webhooks), else polling only; ``prompts``: ``[prompts]``."""
    window = {} if edit_window_seconds is None else {"edit_window_seconds": edit_window_seconds}
    hook = WebhookSettings()
    if webhooks:
        port = free_port()
        hook = WebhookSettings(
            public_url=f"http://127.0.0.1:{port}", port=port, allow_insecure_loopback=True
        )
    return Settings(
        api=ApiSettings(
            base_url=sim.base_url,
            key=SecretStr("" if keys else "sim-key"),
            keys=list(keys),
            plan=plan,
            diffusion_models=list(diffusion_models),
            connect_timeout=2.0,
            read_timeout=5.0,
            stream_idle_timeout=2.0,
        ),
        storage=StorageSettings(path=db_path),
        webhook=hook,
        discord=harness.settings(**window),
        limits=LimitsSettings(**(FAST_POLLING | limits)),
        prompts=prompts or PromptsSettings(),
    )


@dataclass
class RealGenbot:
    """A running genbot: the real core and engines, its store and its Discord adapter."""

    settings: Settings
    store: SqliteStore | PostgresStore
    core: Router
    jobs: JobEngines
    adapter: DiscordAdapter

    async def all_jobs(self) -> list[Job]:
        """Every job, oldest first."""
        return await self.store.tracking.list_unfinished_jobs(ALL_STATUSES)

    async def posted(self, job_type: str, timeout: float = 10.0) -> Job:
        """The only job of ``job_type``, once its result is posted."""
        [job] = [j for j in await self.all_jobs() if j.type == job_type]
        posted: tuple[JobStatus, ...] = ("posted",)
        return await self.jobs.watch.wait(job.id, posted, timeout)


@asynccontextmanager
async def real_genbot(
    harness: Harness, sim: RunningSimulator, db_path: Path, **limits: Any
) -> AsyncIterator[RealGenbot]:
    """A started genbot (see the module docstring); ``limits`` override ``[limits]``. Fails
    the test when genbot logged an error meanwhile (the core turns bugs into logged errors)."""
    async with real_genbot_on(harness, sim, db_path, None, **limits) as running:
        yield running


@asynccontextmanager
async def real_genbot_on(
    harness: Harness,
    sim: RunningSimulator,
    db_path: Path,
    storage_url: str | None,
    **limits: Any,
) -> AsyncIterator[RealGenbot]:
    """:func:`real_genbot`, on PostgreSQL at ``storage_url`` when given (one of several
    processes sharing it)."""
    settings = core_settings(harness, sim, db_path, **limits)
    errors = ErrorLog()
    logging.getLogger().addHandler(errors)
    try:
        async with _started(harness, settings, storage_url) as running:
            yield running
    finally:
        logging.getLogger().removeHandler(errors)
    assert not errors.records, f"genbot logged errors: {errors.summary()}"


@asynccontextmanager
async def _started(
    harness: Harness, settings: Settings, storage_url: str | None = None
) -> AsyncIterator[RealGenbot]:
    db_path = settings.storage.path
    async with AsyncExitStack() as stack:
        store: SqliteStore | PostgresStore = (
            await PostgresStore.open(storage_url, pool_size=4)
            if storage_url is not None
            else await SqliteStore.open(db_path)
        )
        stack.push_async_callback(store.close)
        provider = ProviderClient(
            settings.api,
            retry=FAST_RETRY,
            allow_insecure_webhooks=settings.webhook.allow_insecure_loopback,
        )
        stack.push_async_callback(provider.aclose)
        adapter = harness.adapter(settings.limits)
        core, jobs = build_core(settings, store, provider, [adapter.surface])
        await harness.serve(adapter, core)
        stack.push_async_callback(harness.stop, adapter)
        await core.start()
        stack.push_async_callback(core.stop)
        receiver = webhook_receiver(settings, jobs)
        if receiver is not None:
            await receiver.start()
            stack.push_async_callback(receiver.stop)
        yield RealGenbot(settings, store, core, jobs, adapter)


def creations(sim: RunningSimulator, endpoint: str) -> list[RecordedRequest]:
    """The creation requests the simulator got on ``/gen/v2/<endpoint>``."""
    return [r for r in sim.state.requests_to(f"/gen/v2/{endpoint}") if r.method == "POST"]


def newest(messages: list[FakeMessage], test: Callable[[FakeMessage], bool]) -> FakeMessage | None:
    """The newest of ``messages`` passing ``test``."""
    return next((m for m in reversed(messages) if test(m)), None)


def with_image(message: FakeMessage) -> bool:
    """Whether ``message`` carries an image (a job's result)."""
    return bool(message.attachments)


def finished(message: FakeMessage) -> bool:
    """Whether a streamed answer's message shows its final text."""
    return bool(message.content) and MARKER not in message.content


async def told(fake: FakeDiscord, user: FakeUser, count: int) -> FakeMessage:
    """The ``count``-th private answer to ``user``, once it is there."""
    shown = await fake.wait_for(
        lambda: fake.ephemerals_for(user)[count - 1 :], what=f"private answer {count}"
    )
    return shown[0]


def ephemeral_texts(fake: FakeDiscord, user: FakeUser) -> list[str]:
    """What ``user`` was told privately, oldest interaction first."""
    return [m.content for m in fake.ephemerals_for(user)]


def thread_of(fake: FakeDiscord, message: FakeMessage) -> FakeChannel:
    """The thread started on ``message``."""
    assert message.thread_id is not None, f"no thread was started on message {message.id}"
    return fake.channels[message.thread_id]


class ErrorLog(logging.Handler):
    """Collects every record of level ERROR or above the process logs."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def summary(self) -> str:
        return "; ".join(f"{r.name}: {r.getMessage()} {r.exc_info or ''}" for r in self.records)
