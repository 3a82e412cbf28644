"""A whole genbot on Slack in-process: the real adapter and core, the fake Slack, the simulator.

``slack_genbot(fake, sim, db_path)`` starts genbot the way ``genbot run`` does (storage,
provider client, ``build_core``, the Slack adapter, the core's services) with Slack settings
pointing at ``fake`` and the provider at ``sim``; stopping it and starting another on the same
database and fake is a restart. The fake Slack enforces Slack's budget (one ``chat.update`` per
message per ``UPDATE_INTERVAL`` seconds, Tier 3 per workspace) and genbot is configured with the
same numbers, so any 429 means genbot broke it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from adapters.slack import SlackAdapter
from bot.api import ProviderClient
from bot.kernel import ApiSettings, LimitsSettings, StorageSettings, WebhookSettings, sealer_of
from bot.router import Router
from genbot.compose import JobEngines, build_core, webhook_receiver
from genbot.demo import free_port
from genbot.settings import Settings
from simulator.server import RunningSimulator
from simulator.state import RecordedRequest
from storage import Job, JobStatus, SqliteStore
from storage.postgres import PostgresStore
from tests.adapters.slack.conftest import slack_settings
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_model import FakeMessage

UPDATE_INTERVAL = 1.0
LIMITS: dict[str, Any] = {
    "poll_interval_min": 0.01,
    "poll_interval_max": 0.1,
}
JOB_TIME_SCALE = 0.003
"""Simulated time for image tasks: a relax grid (70 simulated seconds) takes about 0.2 s."""
WAIT = 10.0
FIRST, SECOND = "T0FAKE", "T2"
"""The workspaces of :func:`two_workspaces`."""
SETTLED: frozenset[JobStatus] = frozenset({"posted", "failed_posted", "create_failed"})


def budgeted_fake() -> FakeSlack:
    """A fake Slack answering ``ratelimited`` (429) to a second update of a message within
    ``UPDATE_INTERVAL`` seconds and beyond Tier 3 per workspace."""
    return FakeSlack(min_seconds_between_updates=UPDATE_INTERVAL)


def two_workspaces(**options: object) -> FakeSlack:
    """A fake Slack with two workspaces (``FIRST``, ``SECOND``) where genbot is not installed
    yet."""
    fake = FakeSlack(bot_token="", **options)  # type: ignore[arg-type]
    fake.add_workspace(SECOND, "Second Team", "UBOT2")
    fake.users["U3"] = "carol"
    return fake


async def ask(fake: FakeSlack, url: str, team: str, channel: str, text: str) -> FakeMessage:
    """U3 mentions genbot in ``team``'s ``channel`` asking it to echo ``text`` (an event
    delivered to genbot's events ``url``)."""
    with fake.in_team(team):
        question = fake.user_says(f"<@{fake.bot_user_id}> echo: {text}", channel=channel, user="U3")
        await fake.post_event(url, fake.event_callback(fake.app_mention_event(question)))
    return question


def answer_in(fake: FakeSlack, channel: str, text: str) -> FakeMessage | None:
    """genbot's finished answer ``text`` in ``channel``, when it is there."""
    found = [m for m in fake.bot_messages(channel) if m.markdown == text and not m.streaming]
    return found[0] if found else None


def genbot_settings(
    fake: FakeSlack,
    sim: RunningSimulator,
    db_path: Path,
    *,
    socket_mode: bool = False,
    distributed: bool = False,
    rehosting: bool = False,
    limits: dict[str, Any] | None = None,
) -> Settings:
    """Settings of a genbot on ``fake`` (HTTP mode on a free loopback port, or Socket Mode;
    ``distributed``: installed by OAuth; ``rehosting``: a loopback ``[webhook] public_url``, so
    shared files are downloaded, checked and re-hosted for the provider, and tasks notify the
    webhook receiver there; ``limits`` override ``[limits]``)."""
    hook = WebhookSettings()
    if rehosting:
        port = free_port()
        hook = WebhookSettings(
            public_url=f"http://127.0.0.1:{port}", port=port, allow_insecure_loopback=True
        )
    return Settings(
        api=ApiSettings(
            base_url=sim.base_url,
            key=SecretStr("sim-key"),
            connect_timeout=2.0,
            read_timeout=5.0,
            stream_idle_timeout=2.0,
        ),
        storage=StorageSettings(path=db_path),
        webhook=hook,
        slack=slack_settings(fake, socket_mode=socket_mode, distributed=distributed).model_copy(
            update={"message_updates_per_second": 1 / UPDATE_INTERVAL}
        ),
        limits=LimitsSettings(**{**LIMITS, **(limits or {})}),
    )


@dataclass
class SlackGenbot:
    """A running genbot whose only adapter is Slack."""

    settings: Settings
    store: SqliteStore | PostgresStore
    core: Router
    jobs: JobEngines
    adapter: SlackAdapter

    @property
    def url(self) -> str:
        """Where the fake delivers signed requests (HTTP mode)."""
        assert self.adapter.events_url is not None, "Socket Mode has no URL"
        return self.adapter.events_url

    async def settled(self, job_id: str) -> Job:
        """The job once its result (or failure report) is posted and recorded."""
        return await self.jobs.watch.wait(job_id, SETTLED, WAIT)


@asynccontextmanager
async def slack_genbot(
    fake: FakeSlack,
    sim: RunningSimulator,
    db_path: Path,
    *,
    socket_mode: bool = False,
    distributed: bool = False,
    rehosting: bool = False,
    limits: dict[str, Any] | None = None,
    storage_url: str | None = None,
) -> AsyncIterator[SlackGenbot]:
    """genbot composed as ``genbot run`` composes it (storage, provider client,
    ``build_core``, the Slack adapter, then the core's services and the webhook receiver),
    stopped in reverse order. ``distributed``: installed by OAuth (the fake sends browsers back
    to its redirect); ``rehosting`` and ``limits``: see :func:`genbot_settings`;
    ``storage_url``: on PostgreSQL there instead of SQLite at ``db_path``."""
    settings = genbot_settings(
        fake,
        sim,
        db_path,
        socket_mode=socket_mode,
        distributed=distributed,
        rehosting=rehosting,
        limits=limits,
    )
    async with AsyncExitStack() as stack:
        store: SqliteStore | PostgresStore = (
            await PostgresStore.open(storage_url, pool_size=4)
            if storage_url is not None
            else await SqliteStore.open(db_path)
        )
        stack.push_async_callback(store.close)
        provider = ProviderClient(
            settings.api, allow_insecure_webhooks=settings.webhook.allow_insecure_loopback
        )
        stack.push_async_callback(provider.aclose)
        adapter = SlackAdapter(
            settings.slack,
            settings.limits,
            installations=store.installations,
            sealer=sealer_of(settings.storage, settings.api),
            channels_in_view=store.channels_in_view,
            read_user_groups=settings.quotas.maps_roles_of("slack"),
        )
        core, jobs = build_core(
            settings, store, provider, [adapter.surface], open_channels=settings.open_channels()
        )
        await adapter.start(core)
        if adapter.install_url is not None:
            fake.redirect_url = adapter.install_url.replace("/install", "/oauth_redirect")
        stack.push_async_callback(adapter.stop)
        await core.start()
        stack.push_async_callback(core.stop)
        receiver = webhook_receiver(settings, jobs)
        if receiver is not None:
            await receiver.start()
            stack.push_async_callback(receiver.stop)
        yield SlackGenbot(settings, store, core, jobs, adapter)


def bot_message_with_button(fake: FakeSlack, channel: str, label: str) -> Callable[[], Any]:
    """A condition for ``fake.wait_for``: the newest bot message in ``channel`` carrying a
    button labelled ``label``."""

    def newest() -> FakeMessage | None:
        for message in reversed(fake.bot_messages(channel)):
            if any(b["text"]["text"] == label for b in message.buttons):
                return message
        return None

    return newest


def created(sim: RunningSimulator, path: str) -> list[RecordedRequest]:
    """The requests to ``path`` that created a task."""
    return [r for r in sim.state.requests_to(path) if r.created_id]
