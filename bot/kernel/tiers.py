"""Words of the quota tiers shared by the features that enforce them (the jobs' admission, chat):
when a budget refills, and the refusal of a mode or model a tier does not have."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime

from bot.kernel.settings import TierSettings


def refill_time(at: float) -> str:
    """When a budget refills, as users read it: ``14:00 UTC``."""
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M UTC")


def not_in_tier(tier: TierSettings, what: str, allowed: Collection[str]) -> str:
    """The refusal of ``what`` (``Turbo mode``, ``The model llm-4``), which ``tier`` does not
    have among ``allowed``."""
    return (
        f"{what} is not in your tier **{tier.name}** (it has {', '.join(allowed)}); "
        "ask a genbot admin for a tier that has it."
    )
