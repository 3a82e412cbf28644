"""Words of the quota tiers shared by the features that enforce them (the jobs' admission, chat):
when a budget refills, and the refusal of a mode or model a tier does not have."""

from __future__ import annotations

from bot.kernel.i18n import _, format_clock
from bot.kernel.settings import TierSettings


def refill_time(at: float) -> str:
    """When a budget refills, as users read it: ``14:00 UTC`` (in the language's clock)."""
    return format_clock(at)


def mode_not_in_tier(tier: TierSettings, mode: str) -> str:
    """The refusal of process mode ``mode`` (``turbo``), which ``tier`` does not have."""
    return _(
        "{mode} mode is not in your tier **{tier}** (it has {allowed}); "
        "ask a genbot admin for a tier that has it.",
        mode=mode.title(),
        tier=tier.name,
        allowed=", ".join(tier.modes),
    )


def model_not_in_tier(tier: TierSettings, model: str) -> str:
    """The refusal of ``model`` (``llm-4``), which ``tier`` does not have."""
    return _(
        "The model {model} is not in your tier **{tier}** (it has {allowed}); "
        "ask a genbot admin for a tier that has it.",
        model=model,
        tier=tier.name,
        allowed=", ".join(tier.models),
    )
