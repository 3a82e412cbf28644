"""Bounded writes of genbot's own messages (questions, notes, job messages) under the shared
write budget — the non-streamed counterpart of :mod:`bot.render`.

A write waits for the :class:`~bot.budget.RenderBudget` as an urgent write (held in the budget
until the platform call returns), but never longer than ``timeout`` seconds in all: when
genbot's own accounting has no room in time it writes anyway and lets the platform decide. A
platform's "rate limited, retry after N s" holds the channel in the budget for N s and the write
is retried, at most ``attempts`` times and only while the retry fits in the time left; then
:class:`WriteRateLimited` (a
:class:`~bot.core.UserError` the core shows the user) ends it.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import TypeVar

from bot.budget import BudgetTimeout, Grant, RenderBudget
from bot.core import UserError
from bot.events import Event, MessageRef, OutMessage, Place, RateLimited, Surface

T = TypeVar("T")

WRITE_TIMEOUT = 30.0
WRITE_ATTEMPTS = 3


class WriteRateLimited(UserError):
    """The platform kept refusing a write for rate limiting; ``retry_after`` is its last
    request (seconds)."""

    def __init__(self, retry_after: float) -> None:
        self.retry_after = retry_after
        seconds = max(1, math.ceil(retry_after))
        super().__init__(
            "The platform is rate-limiting genbot's messages here right now, so this could "
            f"not be posted. Please try again in about {seconds} second"
            f"{'' if seconds == 1 else 's'}."
        )


async def _acquire(
    budget: RenderBudget, surface: Surface, place: Place, deadline: float
) -> Grant | None:
    """Wait (bounded by ``deadline``) for room, held until the write returns; None when there
    was none in time."""
    remaining = deadline - budget.clock.monotonic()
    if remaining <= 0:
        return None
    try:
        async with asyncio.timeout(remaining):
            return await budget.acquire(
                place, surface.limits, urgent=True, deadline=deadline, hold=True
            )
    except (BudgetTimeout, TimeoutError):
        return None


async def bounded_write(
    budget: RenderBudget,
    surface: Surface,
    place: Place,
    write: Callable[[], Awaitable[T]],
    *,
    timeout: float = WRITE_TIMEOUT,
    attempts: int = WRITE_ATTEMPTS,
) -> T:
    """Run ``write`` (one platform call in ``place``) under the budget; see the module
    docstring. Surface errors other than rate limits propagate."""
    deadline = budget.clock.monotonic() + timeout
    limited: RateLimited | None = None
    for _ in range(max(attempts, 1)):
        grant = await _acquire(budget, surface, place, deadline)
        if grant is None and limited is not None:
            break
        try:
            return await write()
        except RateLimited as refused:
            limited = refused
            budget.penalize(place, surface.limits, refused.retry_after)
        finally:
            if grant is not None:
                grant.finish()
    assert limited is not None
    raise WriteRateLimited(limited.retry_after)


async def post(
    budget: RenderBudget,
    surface: Surface,
    place: Place,
    message: OutMessage,
    *,
    origin: Event | None = None,
    timeout: float = WRITE_TIMEOUT,
    attempts: int = WRITE_ATTEMPTS,
) -> MessageRef:
    """Post ``message`` in ``place`` (see :func:`bounded_write`)."""
    return await bounded_write(
        budget,
        surface,
        place,
        lambda: surface.send(place, message, origin=origin),
        timeout=timeout,
        attempts=attempts,
    )


async def edit(
    budget: RenderBudget,
    surface: Surface,
    ref: MessageRef,
    message: OutMessage,
    *,
    timeout: float = WRITE_TIMEOUT,
    attempts: int = WRITE_ATTEMPTS,
) -> None:
    """Replace the message ``ref`` with ``message`` (see :func:`bounded_write`)."""
    await bounded_write(
        budget,
        surface,
        ref.place,
        lambda: surface.edit(ref, message),
        timeout=timeout,
        attempts=attempts,
    )
