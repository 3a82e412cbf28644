"""A recording stand-in for the core, and a helper that runs the real adapter against the fake."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import SecretStr

from adapters.discord import DiscordAdapter, DiscordSurface
from adapters.discord.settings import DiscordSettings
from adapters.discord.translate import InteractionContext
from bot.kernel import (
    ButtonPress,
    Command,
    InboundEvent,
    LimitsSettings,
    ModalSubmit,
    UserMessage,
)
from bot.router import Router
from tests.fakes.discord import FakeDiscord
from tests.fakes.router import FakeRouter

T = TypeVar("T")
Reaction = Callable[[Any], Awaitable[None]]


def reaction_key(event: InboundEvent) -> str:
    if isinstance(event, Command):
        return event.name
    if isinstance(event, ButtonPress):
        return f"press:{event.action}"
    if isinstance(event, ModalSubmit):
        return f"submit:{event.action}"
    return "message"


class RecordingCore:
    """Records every event; ``on[key]`` answers some of them through the surface.

    Keys: a command name (``imagine``, ``diffusion.txt2img``), ``press:<action>``,
    ``submit:<action>`` or ``message``. ``seen_answered`` records, per event, whether the
    interaction was already acknowledged when the core got it.
    """

    def __init__(self) -> None:
        self.events: list[InboundEvent] = []
        self.on: dict[str, Reaction] = {}
        self.surface: DiscordSurface | None = None
        self.seen_answered: list[bool] = []
        self._taken: set[int] = set()
        self._changed = asyncio.Event()

    async def handle(self, event: InboundEvent) -> None:
        context = event.context
        answered = (
            isinstance(context, InteractionContext) and context.interaction.response.is_done()
        )
        self.seen_answered.append(answered)
        self.events.append(event)
        self._changed.set()
        reaction = self.on.get(reaction_key(event))
        if reaction is not None:
            await reaction(event)

    async def next_event(self, kind: type[T], timeout: float = 5.0) -> T:
        """The first recorded event of ``kind`` not returned before."""
        async with asyncio.timeout(timeout):
            while True:
                for index, event in enumerate(self.events):
                    if isinstance(event, kind) and index not in self._taken:
                        self._taken.add(index)
                        return event
                self._changed.clear()
                await self._changed.wait()

    def messages(self) -> list[UserMessage]:
        return [e for e in self.events if isinstance(e, UserMessage)]


class Harness:
    """Starts real :class:`DiscordAdapter` instances against one fake; stops them all."""

    def __init__(self, fake: FakeDiscord, errors: list[tuple[str, BaseException]]) -> None:
        self.fake = fake
        self.errors = errors
        self.adapters: list[DiscordAdapter] = []

    def settings(self, **overrides: Any) -> DiscordSettings:
        values: dict[str, Any] = {
            "token": SecretStr(self.fake.token),
            "api_base": self.fake.api_base,
            "gateway_url": self.fake.gateway_url,
            "guild_ids": [self.fake.guild_id],
        }
        return DiscordSettings(**(values | overrides))

    def adapter(self, limits: LimitsSettings | None = None, **overrides: Any) -> DiscordAdapter:
        """An adapter on the fake, not started."""
        return DiscordAdapter(
            self.settings(**overrides),
            limits or LimitsSettings(),
            report_error=lambda where, error: self.errors.append((where, error)),
            guild_ready_timeout=0.05,
            start_timeout=10.0,
        )

    async def serve(self, adapter: DiscordAdapter, core: RecordingCore | Router) -> DiscordAdapter:
        """Start ``adapter`` for ``core`` (a :class:`RecordingCore` behind the real router, with
        the adapter's surface)."""
        if isinstance(core, RecordingCore):
            core.surface = adapter.surface
            await adapter.start(FakeRouter(core, [adapter.surface]))
        else:
            await adapter.start(core)
        self.adapters.append(adapter)
        return adapter

    async def start(
        self, core: RecordingCore | Router, limits: LimitsSettings | None = None, **overrides: Any
    ) -> DiscordAdapter:
        """A started adapter for ``core``."""
        return await self.serve(self.adapter(limits, **overrides), core)

    async def stop(self, adapter: DiscordAdapter) -> None:
        await adapter.stop(drain_timeout=2.0)
        self.adapters.remove(adapter)

    async def stop_all(self) -> None:
        for adapter in list(self.adapters):
            await self.stop(adapter)
