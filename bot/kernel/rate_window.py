"""How often one key may do something costly: a sliding window per key (a client's address, a
user), for the newest keys only."""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable

MAX_KEYS = 4096
"""Keys remembered at once; the least recently seen is forgotten first."""


class RateWindow:
    """At most ``limit`` actions per key in any ``window`` seconds (a sliding log kept for the
    newest ``max_keys`` keys)."""

    def __init__(
        self,
        limit: int,
        window: float,
        *,
        max_keys: int = MAX_KEYS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window = window
        self._max_keys = max_keys
        self._monotonic = monotonic
        self._recent: OrderedDict[str, deque[float]] = OrderedDict()

    def allow(self, key: str) -> bool:
        """Count one action of ``key`` and say whether it is within the limit (a refused
        action is not counted)."""
        now = self._monotonic()
        recent = self._recent.pop(key, None) or deque()
        while recent and recent[0] <= now - self.window:
            recent.popleft()
        allowed = len(recent) < self.limit
        if allowed:
            recent.append(now)
        self._recent[key] = recent
        while len(self._recent) > self._max_keys:
            self._recent.popitem(last=False)
        return allowed

    def retry_after(self, key: str) -> float:
        """Seconds until ``key`` may act again (0 when it may now)."""
        recent = self._recent.get(key)
        if not recent or len(recent) < self.limit:
            return 0.0
        return max(0.0, recent[0] + self.window - self._monotonic())
