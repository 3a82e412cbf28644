"""Budgeted writes of genbot's own messages (questions, notes, job messages, progress edits):
the one path every one-off write takes under the shared :class:`~bot.budget.RenderBudget` — the
non-streamed counterpart of :mod:`bot.render`.

Every caller names a :class:`WritePolicy`, which says how long the write waits for room in the
budget and what happens when there is none in time or the platform keeps refusing:

- ``MUST_DELIVER`` (job results, reports, notes, marks): wait up to ``URGENT_WAIT`` seconds as an
  urgent write, then write anyway and let the platform decide. A platform's "rate limited, retry
  after N s" holds the channel in the budget for N s and the write is retried (at most
  ``ATTEMPTS`` times while time is left); then one last write goes out whatever the budget says,
  and its error, if any, propagates.
- ``RAISE`` (chat questions, replies, notes): the same wait and retries, but when the platform
  kept refusing, :class:`WriteRateLimited` (a :class:`~bot.kernel.errors.UserError` the core shows
  the user) ends it.
- ``SKIP_IF_BUSY`` (progress edits): wait at most ``SKIP_WAIT`` seconds as a paced write, least
  recently served first; no room, or a refusal (which holds the channel), raises
  :class:`WriteSkipped` and nothing is written.

A write with room is held in the budget until the platform call returns.
"""

from __future__ import annotations

import asyncio
import enum
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from bot.budget import BudgetTimeout, RenderBudget
from bot.kernel import Event, MessageRef, OutMessage, Place, RateLimited, Surface, UserError
from bot.write_windows import Grant

T = TypeVar("T")

URGENT_WAIT = 30.0
SKIP_WAIT = 0.3
ATTEMPTS = 3


class WritePolicy(enum.Enum):
    """What a budgeted write does when the budget has no room or the platform refuses (see the
    module docstring)."""

    MUST_DELIVER = "must_deliver"
    RAISE = "raise"
    SKIP_IF_BUSY = "skip_if_busy"


@dataclass(frozen=True)
class _Rules:
    wait: float
    urgent: bool
    attempts: int


_RULES = {
    WritePolicy.MUST_DELIVER: _Rules(URGENT_WAIT, urgent=True, attempts=ATTEMPTS),
    WritePolicy.RAISE: _Rules(URGENT_WAIT, urgent=True, attempts=ATTEMPTS),
    WritePolicy.SKIP_IF_BUSY: _Rules(SKIP_WAIT, urgent=False, attempts=1),
}


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


class WriteSkipped(Exception):
    """A ``SKIP_IF_BUSY`` write found no room in time, or the platform refused it: nothing was
    written."""


async def _room(
    budget: RenderBudget,
    surface: Surface,
    place: Place,
    deadline: float,
    rules: _Rules,
    last_served: float,
) -> Grant | None:
    """Wait (bounded by ``deadline``) for room, held until the write returns; None when there
    was none in time."""
    remaining = deadline - budget.clock.monotonic()
    if remaining <= 0:
        return None
    try:
        async with asyncio.timeout(remaining):
            return await budget.acquire(
                place,
                surface.limits,
                urgent=rules.urgent,
                deadline=deadline,
                hold=True,
                last_served=last_served,
            )
    except (BudgetTimeout, TimeoutError):
        return None


async def budgeted_write(
    budget: RenderBudget,
    surface: Surface,
    place: Place,
    write: Callable[[], Awaitable[T]],
    policy: WritePolicy,
    *,
    wait: float | None = None,
    last_served: float = -math.inf,
) -> T:
    """Run ``write`` (one platform call in ``place``) under the budget as ``policy`` says (see
    the module docstring). ``wait`` replaces the policy's wait for room; ``last_served`` (clock
    time) orders paced writes. Surface errors other than rate limits propagate."""
    rules = _RULES[policy]
    deadline = budget.clock.monotonic() + (rules.wait if wait is None else wait)
    limited: RateLimited | None = None
    for _ in range(rules.attempts):
        grant = await _room(budget, surface, place, deadline, rules, last_served)
        if grant is None:
            if policy is WritePolicy.SKIP_IF_BUSY:
                raise WriteSkipped(f"no write budget in {place} in time")
            if limited is not None:
                break
        try:
            return await write()
        except RateLimited as refused:
            limited = refused
            budget.penalize(place, surface.limits, refused.retry_after)
            if policy is WritePolicy.SKIP_IF_BUSY:
                raise WriteSkipped(f"rate limited in {place}") from refused
        finally:
            if grant is not None:
                grant.finish()
    assert limited is not None
    if policy is WritePolicy.RAISE:
        raise WriteRateLimited(limited.retry_after)
    return await write()


async def post(
    budget: RenderBudget,
    surface: Surface,
    place: Place,
    message: OutMessage,
    *,
    policy: WritePolicy,
    origin: Event | None = None,
) -> MessageRef:
    """Post ``message`` in ``place`` (see :func:`budgeted_write`)."""
    return await budgeted_write(
        budget, surface, place, lambda: surface.send(place, message, origin=origin), policy
    )


async def edit(
    budget: RenderBudget,
    surface: Surface,
    ref: MessageRef,
    message: OutMessage,
    *,
    policy: WritePolicy,
) -> None:
    """Replace the message ``ref`` with ``message`` (see :func:`budgeted_write`)."""
    await budgeted_write(budget, surface, ref.place, lambda: surface.edit(ref, message), policy)
