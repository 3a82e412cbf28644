"""A chat world for tests: the whole genbot of ``tests/bot/harness.py`` (simulator over HTTP,
SqliteStore on disk, ProviderClient, the real job features and tracker) plus the chat engine —
with the
job engine's tools — and the account feature, on a FakePlatform."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.api import ChatRequest, ProviderClient
from bot.features.account import AccountFeature, AccountStorage
from bot.features.audit import AuditTrail
from bot.features.chat import ChatDefaults, ChatEngine
from bot.features.chat.caps import ChatCaps
from bot.features.chat.controls import AnswerControls
from bot.features.chat.documents import DocumentLimits
from bot.features.chat.engine import ChatStorage
from bot.features.chat.stops import StopRequests
from bot.features.chat.tools import ChatImageTools
from bot.features.jobs import Tiers
from bot.features.moderation import Moderation
from bot.kernel import ModerationSettings, Place, PlatformProfile, User
from bot.router import Conversations, Feature, Router, Screen
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from storage import SqliteStore
from tests.bot.api.support import FAST_RETRY, FREE_KEY, settings_for
from tests.bot.harness import Genbot, Parts, running_genbot
from tests.fakes.platform import Actor, FakePlatform, PostedMessage

CHAT_PATH = "/v1/chat/completions"
ALICE = User("alice", "Alice")
BOB = User("bob", "Bob")
DM = Place("fake", "w1", "dm-alice", is_dm=True)
BOB_DM = Place("fake", "w1", "dm-bob", is_dm=True)
CHANNEL = Place("fake", "w1", "c1")
ROOMY = PlatformProfile(max_text=2000, edits_per_window_per_channel=100, edit_window_seconds=1.0)
"""Discord's length limit with a write window that never makes a test wait."""


def sim_config(**overrides: Any) -> SimulatorConfig:
    """A fast, seeded simulator with a free-plan key."""
    values: dict[str, Any] = {"time_scale": 0.003, "seed": 7, "free_api_key": FREE_KEY}
    values.update(overrides)
    return SimulatorConfig(**values)


@dataclass
class ChatWorld:
    """Everything a chat test touches. ``restart`` stops genbot and starts a new one on the same
    simulator, database and platform, as a process restart would.

    With ``plan="free"`` the chat engine and the account feature use a free-plan client (the
    simulator's free key); the job features keep the harness's client. ``moderated``: the chat
    engine checks messages and answers against the workspace's moderation rules, and the router
    screens commands, forms and presses (as genbot/compose.py wires them)."""

    sim: RunningSimulator
    db_path: Path
    platform: FakePlatform
    plan: str
    defaults: ChatDefaults
    tools: bool
    limits: dict[str, Any] | None = None
    daily_credit_budget: int | None = None
    webhooks: bool = False
    moderated: bool = False
    tiers: Tiers | None = None
    documents: DocumentLimits | None = None
    genbot: Genbot = field(init=False)
    engine: ChatEngine = field(init=False)
    account: AccountFeature = field(init=False)
    stops: StopRequests = field(init=False)
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack)

    @property
    def store(self) -> SqliteStore:
        store = self.genbot.store
        assert isinstance(store, SqliteStore), "chat worlds run on SQLite"
        return store

    @property
    def core(self) -> Router:
        return self.genbot.core

    @property
    def api(self) -> ProviderClient:
        return self.genbot.parts.provider

    def _chat(self, parts: Parts) -> ChatEngine:
        provider = parts.provider
        if self.plan == "free":
            provider = ProviderClient(
                settings_for(self.sim.base_url, key=FREE_KEY, plan="free"), retry=FAST_RETRY
            )
            self._stack.push_async_callback(provider.aclose)
        store = parts.store
        self.stops = StopRequests(store.answer_stops)
        self.engine = ChatEngine(
            ChatStorage(
                store.conversations,
                store.conversation_locks,
                store.settings,
                store.ledger,
                store.branches,
                store.feedback,
            ),
            provider,
            parts.outbox,
            tools=ChatImageTools(parts.jobs.chat_jobs, describe_timeout=10.0)
            if self.tools
            else None,
            defaults=self.defaults,
            image_host=media.put_bytes if (media := parts.jobs.media_host) else None,
            moderation=Moderation(
                ModerationSettings(), store.moderation, audit=AuditTrail(store.audit, 90)
            )
            if self.moderated
            else None,
            caps=ChatCaps(tiers=self.tiers, spent=store.ledger.spent),
            documents=self.documents,
            stops=self.stops,
            stopping=lambda: self.core.stopping,
        )
        return self.engine

    def _features(self, parts: Parts) -> list[Feature[Any]]:
        self.account = AccountFeature(
            AccountStorage(parts.store.settings, parts.store.ledger, parts.store.feedback),
            parts.outbox,
            audit=AuditTrail(parts.store.audit, 90),
            plan=self.plan,
            daily_credit_budget=self.daily_credit_budget,
            diffusion_models=parts.jobs.diffusion.models.known,
            tiers=self.tiers,
            languages=parts.languages,
        )
        chat = self._chat(parts)
        controls = AnswerControls(
            self.stops, parts.store.feedback, parts.outbox, parts.store.conversations
        )
        return [chat, controls, self.account]

    def _conversations(self, parts: Parts) -> Conversations:
        return self.engine

    def _screen(self, parts: Parts) -> Screen:
        return Moderation(
            ModerationSettings(), parts.store.moderation, audit=AuditTrail(parts.store.audit, 90)
        )

    async def start(self) -> None:
        self.genbot = await self._stack.enter_async_context(
            running_genbot(
                self.sim,
                self.db_path,
                platform=self.platform,
                limits=self.limits,
                webhooks=self.webhooks,
                features=self._features,
                conversations=self._conversations,
                screen=self._screen if self.moderated else None,
            )
        )

    async def stop(self) -> None:
        await self._stack.aclose()
        self._stack = AsyncExitStack()

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    def actor(self, user: User = ALICE, place: Place = DM) -> Actor:
        return Actor(self.core, self.platform, user, place)

    def chat_bodies(self) -> list[dict[str, Any]]:
        """The bodies of every chat request the simulator received, oldest first."""
        return [request.body for request in self.sim.state.requests_to(CHAT_PATH)]

    def posted_in(self, place: Place) -> list[PostedMessage]:
        return self.platform.in_place(place)

    def texts_in(self, place: Place) -> list[str]:
        return [message.text for message in self.posted_in(place)]

    def threads(self) -> list[Place]:
        """Thread places genbot posted in, in order of their first message."""
        places: list[Place] = []
        for message in self.platform.messages.values():
            if message.ref.place.thread_id and message.ref.place not in places:
                places.append(message.ref.place)
        return places

    async def replay(self, body: dict[str, Any]) -> str:
        """The simulator's whole answer to a recorded request, asked again without streaming
        (its answers depend on the seed and the messages only)."""
        fields = {k: v for k, v in body.items() if k != "stream"}
        return (await self.api.chat.complete(ChatRequest(**fields))).text


@asynccontextmanager
async def chat_world(
    tmp_path: Path,
    *,
    config: SimulatorConfig | None = None,
    platform: FakePlatform | None = None,
    plan: str = "developer",
    defaults: ChatDefaults | None = None,
    tools: bool = True,
    limits: dict[str, Any] | None = None,
    daily_credit_budget: int | None = None,
    webhooks: bool = False,
    moderated: bool = False,
    tiers: Tiers | None = None,
    documents: DocumentLimits | None = None,
) -> AsyncIterator[ChatWorld]:
    """A started :class:`ChatWorld` with its own simulator (``webhooks``: genbot has a public
    address on loopback, so a media host; ``tiers``: the chat caps' and ``/usage``'s)."""
    async with serve(config or sim_config()) as sim:
        world = ChatWorld(
            sim,
            tmp_path / "genbot.db",
            platform or FakePlatform(profile=ROOMY),
            plan,
            defaults or ChatDefaults(),
            tools,
            limits,
            daily_credit_budget,
            webhooks,
            moderated,
            tiers,
            documents,
        )
        await world.start()
        try:
            yield world
        finally:
            await world.stop()
