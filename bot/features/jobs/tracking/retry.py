"""How failed deliveries of results and failure reports are retried."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeliveryRetry:
    """How failed deliveries are retried: after ``first_delay`` seconds, doubling up to
    ``max_delay``, until the waits would add up to more than ``give_up_after`` seconds."""

    first_delay: float = 1.0
    max_delay: float = 60.0
    give_up_after: float = 600.0
    image_attempts: int = 3
    """From this attempt on, a result whose image cannot be downloaded is posted with its
    link instead."""

    def delay(self, failures: int) -> float | None:
        """The wait before the attempt after ``failures`` failed ones; None: give up."""
        waits = [min(self.first_delay * 2.0**n, self.max_delay) for n in range(failures)]
        if sum(waits) > self.give_up_after:
            return None
        return waits[-1]
