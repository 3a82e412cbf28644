"""The usage ledger's sums: tokens and credits per user per UTC day."""

from __future__ import annotations

from dataclasses import dataclass

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
