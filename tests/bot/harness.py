"""A whole genbot in-process, against the simulator over HTTP, driven through a fake platform.

Two context managers:

- ``harness(tmp_path, ...)`` starts a simulator (``time_scale`` tiny, insecure webhooks admitted)
  and a genbot on ``tmp_path / "genbot.db"``;
- ``running_genbot(sim, db_path, ...)`` starts only a genbot, so a test can stop one and start
  another on the same simulator, database and :class:`FakePlatform` (restarts).

Either yields a :class:`Genbot`: ``bot.actor("alice")`` pushes events, ``bot.platform`` records
what users see, ``bot.store`` / ``bot.sim.state`` show what genbot stored and what the provider
saw. Extra features (the chat engine…) are given as factories of :class:`Parts`, so they can use
the same store, provider client, budget and job tools::

    chat = lambda parts: Chat(parts.store, parts.provider, parts.outbox, parts.jobs.chat_jobs)
    async with harness(tmp_path, conversations=chat):
        ...

Everything stops in order on exit: core services (tracker, receiver), provider client, store,
simulator.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from bot.api import ProviderClient, RetryPolicy
from bot.kernel import (
    ApiSettings,
    ButtonPress,
    Command,
    LanguageChoices,
    LimitsSettings,
    ModalSubmit,
    OptionValue,
    Place,
    PlatformProfile,
    PromptsSettings,
    StorageSettings,
    SurfaceRegistry,
    User,
    WebhookSettings,
)
from bot.outbox import Outbox, Pacer
from bot.refs import Refs, RefStorage
from bot.router import Conversations, Feature, Lifecycle, Router, Screen
from genbot.compose import JobEngines, build_job_engines, webhook_receiver
from genbot.demo import free_port
from genbot.settings import Settings
from simulator.server import RunningSimulator, serve
from simulator.state import Dialect, SimulatorConfig
from storage import ALL_STATUSES, Job, JobStatus, SqliteStore
from storage.postgres import PostgresStore
from tests.fakes.platform import Actor, FakePlatform, PostedMessage

PLACE = Place("fake", "w1", "c1")
FAST_RETRY = RetryPolicy(max_attempts=4, max_total_seconds=5.0, base_delay=0.01, max_delay=0.05)
SETTLED: frozenset[JobStatus] = frozenset({"posted", "failed_posted", "create_failed"})
ROOMY = PlatformProfile(edits_per_window_per_channel=1000, edit_window_seconds=1.0)
"""Default platform profile: generous, so tests do not wait for a window (window tests pass
their own platform)."""
TEST_LIMITS: dict[str, Any] = {"poll_interval_min": 0.01, "poll_interval_max": 0.1}
WEBHOOK_LIMITS: dict[str, Any] = {"poll_interval_min": 0.01, "poll_interval_max": 30.0}


@dataclass
class Parts:
    """What extra feature factories get: the pieces of the running genbot."""

    settings: Settings
    store: SqliteStore | PostgresStore
    provider: ProviderClient
    surfaces: SurfaceRegistry
    outbox: Outbox
    jobs: JobEngines
    languages: LanguageChoices
    """The choices of ``/settings language`` the router reads (as genbot/compose.py wires)."""


FeatureFactory = Callable[[Parts], Iterable[Feature[Any]]]
ConversationsFactory = Callable[[Parts], Conversations]
ScreenFactory = Callable[[Parts], Screen]


@dataclass
class LateScreen:
    """The router's screen as the job engines see it: built after them (from their parts), so
    it is handed over once made."""

    to: Screen | None = None

    async def screen(
        self, event: Command | ModalSubmit | ButtonPress, values: Mapping[str, OptionValue]
    ) -> None:
        if self.to is not None:
            await self.to.screen(event, values)


@dataclass
class Genbot:
    """A running genbot and the fakes around it."""

    sim: RunningSimulator
    parts: Parts
    core: Router
    platform: FakePlatform

    @property
    def store(self) -> SqliteStore | PostgresStore:
        return self.parts.store

    @property
    def jobs(self) -> JobEngines:
        return self.parts.jobs

    @property
    def settings(self) -> Settings:
        return self.parts.settings

    def actor(
        self,
        user_id: str = "alice",
        *,
        place: Place = PLACE,
        admin: bool = False,
        locale: str | None = None,
    ) -> Actor:
        """A user who pushes events into this genbot (``locale``: their app's language)."""
        user = User(user_id, user_id.title(), admin)
        return Actor(self.core, self.platform, user, place, locale)

    async def all_jobs(self) -> list[Job]:
        """Every job, oldest first."""
        return await self.store.tracking.list_unfinished_jobs(ALL_STATUSES)

    async def latest_job(self) -> Job:
        """The job created last."""
        jobs = await self.all_jobs()
        assert jobs, "no job was created"
        return jobs[-1]

    async def settled(self, job_id: str, timeout: float = 10.0) -> Job:
        """The job once it is posted, reported or refused."""
        return await self.jobs.watch.wait(job_id, SETTLED, timeout)

    async def result(self, job_id: str, timeout: float = 10.0) -> PostedMessage:
        """The message holding a job's result (or failure report), once posted."""
        job = await self.settled(job_id, timeout)
        assert job.result_message_id, f"job {job_id} ended {job.status}: {job.error}"
        return self.platform.messages[job.result_message_id]

    def progress(self, job: Job) -> PostedMessage:
        """A job's progress message."""
        assert job.progress_message_id is not None
        return self.platform.messages[job.progress_message_id]


def harness_settings(
    sim_url: str, db_path: Path, *, webhooks: bool, limits: Mapping[str, Any] | None = None
) -> Settings:
    """Settings for a test genbot: short timeouts, fast polling, webhooks on a free port."""
    chosen = {**(WEBHOOK_LIMITS if webhooks else TEST_LIMITS), **(limits or {})}
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
        api=ApiSettings(
            base_url=sim_url,
            key=SecretStr("sim-key"),
            connect_timeout=2.0,
            read_timeout=5.0,
            stream_idle_timeout=2.0,
        ),
        storage=StorageSettings(path=db_path),
        webhook=hook,
        limits=LimitsSettings(**chosen),
    )


@asynccontextmanager
async def running_genbot(
    sim: RunningSimulator,
    db_path: Path,
    *,
    platform: FakePlatform | None = None,
    webhooks: bool = False,
    limits: Mapping[str, Any] | None = None,
    open_channels: Mapping[str, frozenset[str]] | None = None,
    features: FeatureFactory | None = None,
    conversations: ConversationsFactory | None = None,
    screen: ScreenFactory | None = None,
    services: Sequence[Lifecycle] = (),
    api_url: str | None = None,
    storage_url: str | None = None,
    secret_keys: tuple[str, str] = ("", ""),
    prompts: PromptsSettings | None = None,
) -> AsyncIterator[Genbot]:
    """A started genbot on ``db_path`` (on PostgreSQL at ``storage_url`` when given) talking
    to ``sim`` (through ``api_url`` when given: a proxy in front of it; see the module
    docstring), sealing with ``[storage] secret_key`` and ``secret_key_previous`` set to
    ``secret_keys``, with ``prompts`` as ``[prompts]`` when given."""
    settings = harness_settings(api_url or sim.base_url, db_path, webhooks=webhooks, limits=limits)
    keys = {
        "secret_key": SecretStr(secret_keys[0]),
        "secret_key_previous": SecretStr(secret_keys[1]),
    }
    settings = settings.model_copy(
        update={
            "storage": settings.storage.model_copy(update=keys),
            "prompts": prompts or settings.prompts,
        }
    )
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
        fake = platform or FakePlatform(profile=ROOMY)
        surfaces = SurfaceRegistry([fake])
        outbox = Outbox(
            surfaces, Pacer(shared=store.write_windows if store.db.dialect.shared else None)
        )
        late = LateScreen()
        jobs = build_job_engines(settings, store, provider, outbox, screen=late)
        languages = LanguageChoices(store.settings)
        parts = Parts(settings, store, provider, surfaces, outbox, jobs, languages)
        extra = list(features(parts)) if features is not None else []
        chat = conversations(parts) if conversations is not None else None
        receiver = webhook_receiver(settings, jobs)
        listeners: list[Lifecycle] = [receiver] if receiver is not None else []
        core = Router(
            outbox,
            [*jobs.features, *extra],
            chat,
            [*jobs.services, *listeners, *services],
            refs=Refs(
                RefStorage(store.jobs, store.message_links, store.conversations, store.preferences),
                open_channels,
            ),
            languages=languages,
            screen=screen(parts) if screen is not None else None,
        )
        late.to = core.screen
        await core.start()
        stack.push_async_callback(core.stop)
        yield Genbot(sim, parts, core, fake)


@asynccontextmanager
async def harness(
    tmp_path: Path,
    *,
    time_scale: float = 0.003,
    sim_config: SimulatorConfig | None = None,
    dialect: Dialect = "default",
    **options: Any,
) -> AsyncIterator[Genbot]:
    """A simulator (speaking ``dialect``) and a genbot on ``tmp_path / "genbot.db"``;
    ``options`` go to :func:`running_genbot`."""
    config = sim_config or SimulatorConfig(
        time_scale=time_scale, insecure_webhooks=True, dialect=dialect
    )
    async with (
        serve(config) as sim,
        running_genbot(sim, tmp_path / "genbot.db", **options) as bot,
    ):
        yield bot
