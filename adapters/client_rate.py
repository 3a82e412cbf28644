"""How often one client of a listener may do something costly (per address)."""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable

MAX_CLIENTS = 4096
"""Clients remembered at once; the least recently seen is forgotten first."""


class ClientRate:
    """At most ``limit`` actions per client in any ``window`` seconds (a sliding log kept for
    the newest :data:`MAX_CLIENTS` clients)."""

    def __init__(
        self,
        limit: int,
        window: float,
        *,
        max_clients: int = MAX_CLIENTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window = window
        self._max_clients = max_clients
        self._clock = clock
        self._recent: OrderedDict[str, deque[float]] = OrderedDict()

    def allow(self, client: str) -> bool:
        """Count one action of ``client`` and say whether it is within the limit (a refused
        action is not counted)."""
        now = self._clock()
        recent = self._recent.pop(client, None) or deque()
        while recent and recent[0] <= now - self.window:
            recent.popleft()
        allowed = len(recent) < self.limit
        if allowed:
            recent.append(now)
        self._recent[client] = recent
        while len(self._recent) > self._max_clients:
            self._recent.popitem(last=False)
        return allowed

    def retry_after(self, client: str) -> float:
        """Seconds until ``client`` may act again (0 when it may now)."""
        recent = self._recent.get(client)
        if not recent or len(recent) < self.limit:
            return 0.0
        return max(0.0, recent[0] + self.window - self._clock())
