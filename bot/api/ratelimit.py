"""Rate limits as a queue, not an error.

The provider limits chat requests per minute and per day without saying how many
(docs/provider.md#rate-limits). genbot therefore

- honours every 429: it waits for ``Retry-After`` (seconds or an HTTP date; exponential backoff
  with jitter when absent, and at least half the backoff from the second 429 of a call on) and
  tries again, as long as the whole wait stays within
  :attr:`RateLimitPolicy.max_wait` — safe for creations too, since a 429 created nothing, and for
  a chat stream before its first token; past the bound it raises :class:`ProviderRateLimited`;
- optionally paces chat itself (``[api] chat_requests_per_minute`` / ``chat_requests_per_day``,
  per key, per process) with :class:`RequestPacer`, a first-come-first-served queue;
- tells whoever waits: code that wants to show a wait runs the call inside
  :func:`observe_waits`, and receives a :class:`Wait` each time the position or the wait
  changes (a context variable carries the observer through the client, so no signature
  changes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from bot.api.errors import ProviderRateLimited

log = logging.getLogger("bot.api")

MAX_RETRY_AFTER = 24 * 3600.0
MINUTE = 60.0
DAY = 24 * 3600.0


@dataclass(frozen=True)
class RateLimitPolicy:
    """How long genbot waits out rate limits for one call, and the backoff without
    ``Retry-After``: ``base_backoff * 2**n`` (capped at ``max_backoff``) with full jitter."""

    max_wait: float = 60.0
    base_backoff: float = 1.0
    max_backoff: float = 16.0


@dataclass(frozen=True)
class Wait:
    """What a waiting caller is told: ``ahead`` requests queued before it (0 when it waits
    only for the provider's limit) and about how many ``seconds`` remain (None: unknown)."""

    ahead: int
    seconds: float | None


WaitObserver = Callable[[Wait], None]
_observer: ContextVar[WaitObserver | None] = ContextVar("genbot_wait_observer", default=None)


@contextlib.contextmanager
def observe_waits(observer: WaitObserver) -> Iterator[None]:
    """Calls made inside the block report their rate-limit waits to ``observer``."""
    token = _observer.set(observer)
    try:
        yield
    finally:
        _observer.reset(token)


def report_wait(wait: Wait) -> None:
    """Tell the current observer, if any, about a wait (its errors are logged, not raised)."""
    observer = _observer.get()
    if observer is None:
        return
    try:
        observer(wait)
    except Exception:
        log.exception("a wait observer failed")


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` in seconds: a number of seconds, or an HTTP date (relative to ``now``,
    Unix time); ``None`` when absent or unreadable. Clamped to [0, 24 h]."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


class RateLimitWaits:
    """The rate-limit waits of one call: :meth:`wait` sleeps out a 429 or raises once the
    policy's bound would be passed."""

    def __init__(self, policy: RateLimitPolicy, rng: random.Random | None = None) -> None:
        self.policy = policy
        self._rng = rng or random.Random()
        self._deadline = time.monotonic() + policy.max_wait
        self.count = 0

    def delay(self, error: ProviderRateLimited) -> float:
        """How long to wait before the next try: ``Retry-After`` as given the first time;
        after that, at least half the backoff's ceiling, so a provider answering every try
        with ``Retry-After: 0`` is not asked again at once until the bound."""
        ceiling = min(self.policy.max_backoff, self.policy.base_backoff * 2**self.count)
        if error.retry_after is not None:
            return error.retry_after if self.count == 0 else max(error.retry_after, ceiling / 2)
        return self._rng.uniform(ceiling / 2, ceiling)

    async def wait(self, error: ProviderRateLimited) -> float:
        """Sleep before trying again, telling the observer, and return the seconds slept;
        raise :class:`ProviderRateLimited` (with the wait asked for) when that would pass the
        bound."""
        delay = self.delay(error)
        self.count += 1
        if time.monotonic() + delay > self._deadline:
            raise ProviderRateLimited(delay, "provider 429 beyond genbot's wait") from error
        log.info("provider rate limit (429): waiting %.1f s before trying again", delay)
        report_wait(Wait(0, delay))
        await asyncio.sleep(delay)
        return delay


SharedPacing = Callable[[int, float, int, float], Awaitable[float]]
"""Counting a request against limits several processes share:
``(per_minute, minute, per_day, day) → 0`` when the request may go now (it is counted), else
the seconds to wait before asking again (nothing is counted)."""


class RequestPacer:
    """At most ``per_minute`` requests in any ``minute`` (60 s) and ``per_day`` in any ``day``
    (24 h) — 0: no limit —
    first come, first served. :meth:`acquire` waits for a slot (reporting the queue position
    and the expected wait) or raises :class:`ProviderRateLimited` when the wait would exceed
    ``max_wait``. With ``shared``, the limits hold over every process that shares it: a
    request this process would send is also counted there, and waits while the others used
    the room."""

    def __init__(
        self,
        per_minute: int = 0,
        per_day: int = 0,
        *,
        minute: float = MINUTE,
        day: float = DAY,
        monotonic: Callable[[], float] = time.monotonic,
        shared: SharedPacing | None = None,
    ) -> None:
        self.per_minute = per_minute
        self.per_day = per_day
        self.shared = shared
        self._windows = (minute, day)
        self._monotonic = monotonic
        self._minute: deque[float] = deque()
        self._day: deque[float] = deque()
        self._queue: list[asyncio.Event] = []

    @property
    def enabled(self) -> bool:
        """Whether any limit is set."""
        return self.per_minute > 0 or self.per_day > 0

    @property
    def waiting(self) -> int:
        """Requests queued right now."""
        return len(self._queue)

    async def _elsewhere(self) -> float:
        """0 when the processes sharing the limits left room (this request is counted), else
        how long to wait."""
        if self.shared is None:
            return 0.0
        minute, day = self._windows
        return await self.shared(self.per_minute, minute, self.per_day, day)

    def _forget_old(self, now: float) -> None:
        minute, day = self._windows
        while self._minute and self._minute[0] <= now - minute:
            self._minute.popleft()
        while self._day and self._day[0] <= now - day:
            self._day.popleft()

    def _slot_in(self, ahead: int, now: float) -> float:
        """Seconds until the request with ``ahead`` requests before it may go (assuming each
        of them goes as soon as it may)."""
        wait = 0.0
        minute, day = self._windows
        for stamps, limit, window in (
            (self._minute, self.per_minute, minute),
            (self._day, self.per_day, day),
        ):
            needed = len(stamps) + ahead + 1 - limit
            if limit <= 0 or needed <= 0:
                continue
            rounds, index = divmod(needed - 1, limit)
            oldest = stamps[index] if index < len(stamps) else now
            wait = max(wait, oldest + window * (rounds + 1) - now)
        return max(wait, 0.0)

    async def acquire(self, max_wait: float) -> None:
        """Take a slot, waiting in line for it (see the class docstring)."""
        if not self.enabled:
            return
        now = self._monotonic()
        self._forget_old(now)
        deadline = now + max_wait
        expected = self._slot_in(len(self._queue), now)
        if expected > max_wait:
            raise ProviderRateLimited(expected, "genbot's own chat pacing")
        turn = asyncio.Event()
        self._queue.append(turn)
        told: tuple[int, int] | None = None
        try:
            while True:
                now = self._monotonic()
                self._forget_old(now)
                ahead = self._queue.index(turn)
                delay = self._slot_in(ahead, now)
                if ahead == 0 and delay <= 0:
                    delay = await self._elsewhere()
                    if delay <= 0:
                        self._minute.append(now)
                        self._day.append(now)
                        return
                if now + delay > deadline:
                    raise ProviderRateLimited(delay, "genbot's own chat pacing")
                if told != (ahead, math.ceil(delay)):
                    told = (ahead, math.ceil(delay))
                    report_wait(Wait(ahead, delay))
                turn.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay if ahead == 0 else None):
                        await turn.wait()
        finally:
            self._queue.remove(turn)
            for waiting in self._queue:
                waiting.set()
