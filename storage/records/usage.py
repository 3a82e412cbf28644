"""The usage ledger's sums: tokens and credits per user per UTC day."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

ESTIMATED_CREDITS = "credits_estimate"
"""The ledger ``kind`` of credits genbot estimated from its configured prices, because the
provider did not say what it charged (diffusion; docs/provider.md#diffusion-prices)."""


@dataclass(frozen=True)
class UsageTotals:
    """Sums over usage ledger entries; ``estimated_credits`` is the part of ``credits``
    recorded as :data:`ESTIMATED_CREDITS`."""

    tokens_prompt: int = 0
    tokens_completion: int = 0
    credits: int = 0
    entries: int = 0
    estimated_credits: int = 0

    @property
    def tokens(self) -> int:
        return self.tokens_prompt + self.tokens_completion


Refill = Literal["daily", "hourly"]
"""How a budget refills: at 00:00 UTC (``daily``), or hour by hour (``hourly``: what was
spent in the last 24 whole hours counts, so each hour what was spent a day before comes back)."""
HOUR = 3600.0
DAY = 86400.0


def utc_day(timestamp: float) -> str:
    """The UTC day (``YYYY-MM-DD``) of a Unix timestamp."""
    return datetime.fromtimestamp(timestamp, UTC).date().isoformat()


def window_start(refill: Refill, now: float) -> float:
    """Where the window of ``refill`` begins at ``now``: 00:00 UTC today, or the start of the
    hour 23 hours before the current one."""
    if refill == "daily":
        return now - now % DAY
    return now - now % HOUR - 23 * HOUR


def still_counting(now: float) -> float:
    """Where the longest window of any refill begins at ``now``: usage since then may still
    count against a budget (what ``/forget-me`` keeps under the user's derived name)."""
    return min(window_start("daily", now), window_start("hourly", now))


@dataclass(frozen=True)
class Spent:
    """What one user spent in the window of ``refill`` at ``now``: ``hours`` holds, for each
    hour with usage (oldest first), its start, credits and chat tokens."""

    refill: Refill
    now: float
    hours: tuple[tuple[float, int, int], ...] = ()

    @property
    def credits(self) -> int:
        return sum(credits for _, credits, _ in self.hours)

    @property
    def tokens(self) -> int:
        return sum(tokens for _, _, tokens in self.hours)

    def refills_at(self, allowed: int, *, tokens: bool = False) -> float:
        """When the credits (or ``tokens``) spent are below ``allowed`` again: the next 00:00
        UTC, or (hourly) the hour at which enough of what was spent leaves the window."""
        if self.refill == "daily":
            return window_start("daily", self.now) + DAY
        left = self.tokens if tokens else self.credits
        for start, credits, spent_tokens in self.hours:
            left -= spent_tokens if tokens else credits
            if left < allowed:
                return start + DAY
        return self.now - self.now % HOUR + HOUR
