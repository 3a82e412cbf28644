"""A recording stand-in for the core behind genbot's real router: the intakes, their supervision
(deadline, order, drain) and the error boundary are production's; only the routing is replaced,
so the stand-in gets every event as the adapter submitted it (no feature table, no option
parsing)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from bot.kernel import InboundEvent, Surface, SurfaceRegistry
from bot.outbox import Outbox
from bot.router import Router


class Handles(Protocol):
    """A recording stand-in for the core: acts on every event it is given."""

    async def handle(self, event: InboundEvent) -> None: ...


class FakeRouter(Router):
    """The real :class:`bot.router.Router`, routing every event to ``core``; answers (refusals,
    "too slow", failures) go out on ``surfaces``."""

    def __init__(self, core: Handles, surfaces: Iterable[Surface]) -> None:
        super().__init__(Outbox(SurfaceRegistry(surfaces)), [])
        self.core = core

    async def _route(self, event: InboundEvent) -> None:
        await self.core.handle(event)
