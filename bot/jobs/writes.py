"""Job messages written under the process-wide :class:`~bot.budget.RenderBudget`: urgent writes
(results, reports, notes) wait for budget (bounded, then write anyway) and retry rate limits;
progress edits take budget only when there is room within a short wait."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import TypeVar

from bot.budget import BudgetTimeout, Grant, RenderBudget
from bot.core import SurfaceRegistry
from bot.events import Event, MessageRef, OutMessage, Place, RateLimited, Surface

T = TypeVar("T")
URGENT_BUDGET_WAIT = 30.0
PROGRESS_BUDGET_WAIT = 0.3
MAX_RATE_LIMIT_RETRIES = 3


class BudgetedWrites:
    """Writes on the surfaces of ``surfaces`` under ``budget``."""

    def __init__(self, surfaces: SurfaceRegistry, budget: RenderBudget) -> None:
        self.surfaces = surfaces
        self.budget = budget

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        """Post ``message`` (an urgent write)."""
        surface = self.surfaces.get(place.platform)
        return await self.urgent(
            surface, place, lambda: surface.send(place, message, origin=origin)
        )

    async def urgent(self, surface: Surface, place: Place, write: Callable[[], Awaitable[T]]) -> T:
        """Run one write that must land: wait for budget (bounded), retry rate limits."""
        for _ in range(MAX_RATE_LIMIT_RETRIES):
            _, grant = await self.acquire(surface, place, urgent=True)
            try:
                return await write()
            except RateLimited as limited:
                self.penalize(surface, place, limited)
                await asyncio.sleep(min(max(limited.retry_after, 0.0), URGENT_BUDGET_WAIT))
            finally:
                if grant is not None:
                    grant.finish()
        return await write()

    async def acquire(
        self,
        surface: Surface,
        place: Place,
        *,
        urgent: bool,
        wait: float = PROGRESS_BUDGET_WAIT,
        last_served: float = -math.inf,
    ) -> tuple[bool, Grant | None]:
        """Whether to write now, and the budget grant to finish once the platform call returns
        (writes count until they land, so a busy event loop cannot push them past the
        platform's limit). An urgent write goes ahead without a grant when the wait runs out;
        a progress edit waits at most ``wait`` seconds, least recently served first."""
        wait = URGENT_BUDGET_WAIT if urgent else wait
        deadline = self.budget.clock.monotonic() + wait
        try:
            async with asyncio.timeout(wait):
                grant = await self.budget.acquire(
                    place,
                    surface.limits,
                    urgent=urgent,
                    deadline=deadline,
                    hold=True,
                    last_served=last_served,
                )
        except (BudgetTimeout, TimeoutError):
            return urgent, None
        return True, grant

    def penalize(self, surface: Surface, place: Place, limited: RateLimited) -> None:
        """Hold ``place``'s budget for the platform's retry-after."""
        self.budget.penalize(place, surface.limits, limited.retry_after)
