"""The bytes of result images that deliveries hold at once, bounded.

A delivery downloads its result's images (to re-upload them: the provider's links expire) and
holds them until its write returns, which may wait for its channel's write window. Counting
deliveries bounds that memory only as the largest image allows (``[limits] max_upload_bytes``
each); counting bytes lets many small results wait at once and still bounds a burst of large
ones. A delivery asks for room for the most its images may take before it downloads, keeps what
they took once downloaded, and gives it back when its write is over.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

RESULTS_AT_MOST_HELD = 16
"""How many results of one image at the upload limit deliveries may hold at once: a burst holds
at most this × ``[limits] max_upload_bytes`` of images (128 MiB by default)."""


class HeldImages:
    """At most ``limit`` bytes held at once, granted first come, first served (see the module
    docstring)."""

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 1)
        self.held = 0
        """Bytes held now."""
        self._waiting: deque[tuple[int, asyncio.Future[None]]] = deque()

    @asynccontextmanager
    async def room(self, most: int) -> AsyncIterator[Callable[[int], None]]:
        """Hold ``most`` bytes (at most ``limit``) for the block, waiting for them in turn. The
        block is given ``keep``: ``keep(size)`` lowers the hold to ``size`` bytes once it is
        known (it never raises it)."""
        held = min(max(most, 0), self.limit)
        await self._take(held)

        def keep(size: int) -> None:
            nonlocal held
            kept = min(max(size, 0), held)
            self._give_back(held - kept)
            held = kept

        try:
            yield keep
        finally:
            self._give_back(held)

    async def _take(self, size: int) -> None:
        if not size or (not self._waiting and self.held + size <= self.limit):
            self.held += size
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (size, turn)
        self._waiting.append(entry)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._give_back(size)
            else:
                with contextlib.suppress(ValueError):
                    self._waiting.remove(entry)
                self._hand_over()
            raise

    def _give_back(self, size: int) -> None:
        if size:
            self.held -= size
            self._hand_over()

    def _hand_over(self) -> None:
        """Grant the waiting holds, in turn, while the first of them fits."""
        while self._waiting and self.held + self._waiting[0][0] <= self.limit:
            size, turn = self._waiting.popleft()
            if not turn.done():
                self.held += size
                turn.set_result(None)
