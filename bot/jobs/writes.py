"""Job messages written on the surfaces of a :class:`~bot.kernel.registry.SurfaceRegistry` through
the one budgeted-write path (:func:`bot.posting.budgeted_write`): every call names its
:class:`~bot.posting.WritePolicy`."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import TypeVar

from bot.budget import RenderBudget
from bot.kernel import Event, MessageRef, OutMessage, Place, Surface, SurfaceRegistry
from bot.posting import WritePolicy, budgeted_write

T = TypeVar("T")


class BudgetedWrites:
    """Writes on the surfaces of ``surfaces`` under ``budget``."""

    def __init__(self, surfaces: SurfaceRegistry, budget: RenderBudget) -> None:
        self.surfaces = surfaces
        self.budget = budget

    async def send(
        self,
        place: Place,
        message: OutMessage,
        *,
        policy: WritePolicy,
        origin: Event | None = None,
    ) -> MessageRef:
        """Post ``message`` in ``place``."""
        surface = self.surfaces.get(place.platform)
        return await self.write(
            surface, place, lambda: surface.send(place, message, origin=origin), policy
        )

    async def write(
        self,
        surface: Surface,
        place: Place,
        call: Callable[[], Awaitable[T]],
        policy: WritePolicy,
        *,
        wait: float | None = None,
        last_served: float = -math.inf,
    ) -> T:
        """Run ``call`` (one platform call on ``surface`` in ``place``) as ``policy`` says."""
        return await budgeted_write(
            self.budget, surface, place, call, policy, wait=wait, last_served=last_served
        )
