"""How a process speaks about a database outage: a few lines, not one per failed call.

Every background loop that touches storage (the tracker's rounds, the lease heartbeat, the
wakeup and playground listeners, result deliveries, the progress ticker) reports a
:class:`storage.StorageError` here as a *kind* of failure instead of logging it. The first
failure of an outage is one warning naming its kind and error; a kind failing for the first time
during the outage adds one line; while it lasts, one summary line per ``summary_every`` seconds
counts the failures of each kind; and the first success afterwards says the database is back,
after how long and how many failures. Each loop backs off on its own (see its module).

One :data:`OUTAGE` per process (like :mod:`bot.kernel.metrics`): the loops are many, the database
one.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

from bot.kernel import metrics

log = logging.getLogger("genbot.storage")

SUMMARY_SECONDS = 60.0


class StorageOutage:
    """Counts storage failures by kind and logs them as the module docstring says."""

    def __init__(
        self,
        *,
        summary_every: float = SUMMARY_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.summary_every = summary_every
        self._monotonic = monotonic
        self._since: float | None = None
        self._summarized_at = 0.0
        self.failures: Counter[str] = Counter()

    @property
    def ongoing(self) -> bool:
        """Whether storage failed and has not answered since."""
        return self._since is not None

    def failed(self, kind: str, error: BaseException) -> None:
        """A call of ``kind`` (e.g. "tracker round") failed with ``error``."""
        now = self._monotonic()
        metrics.storage_failed(kind)
        if self._since is None:
            self._since = self._summarized_at = now
            log.warning(
                "genbot can't reach its database (%s: %s); retrying with backoff, a summary "
                "every %.0f s until it is back",
                kind,
                error,
                self.summary_every,
            )
        elif kind not in self.failures:
            log.warning("database failure in the %s too: %s", kind, error)
        self.failures[kind] += 1
        if now - self._summarized_at >= self.summary_every:
            self._summarized_at = now
            log.warning(
                "database still failing after %.0f s: %s", now - self._since, self._counts()
            )

    def succeeded(self) -> None:
        """A call reached the database: an outage, if one was under way, is over."""
        if self._since is None:
            return
        log.warning(
            "the database is back after %.0f s (%s)",
            self._monotonic() - self._since,
            self._counts(),
        )
        self._since = None
        self.failures.clear()

    def _counts(self) -> str:
        return ", ".join(f"{kind} ×{count}" for kind, count in self.failures.most_common())


OUTAGE = StorageOutage()
"""This process's outage log."""


def backoff(failures: int, *, first: float = 1.0, most: float = 30.0) -> float:
    """Seconds to wait after ``failures`` consecutive failures: ``first`` doubling, at most
    ``most``."""
    return min(first * 2.0 ** max(failures - 1, 0), most)
