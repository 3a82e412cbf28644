"""A :class:`bot.kernel.surface.Surface` that refuses writes beyond a platform's windows on a
(virtual) clock, as the platform rate-limits them.

Every ``send`` and ``edit`` counts against its channel (the thread's parent): more than
``profile.edits_per_window_per_channel`` in any ``profile.edit_window_seconds`` span, more than
``profile.edits_per_minute_per_workspace`` in 60 s, or a message edited again sooner than
``profile.min_seconds_between_edits_of_one_message`` is refused with :class:`RateLimited`, as
Discord answers 429. ``flaky_every=N`` also refuses every N-th call regardless. Every accepted
write is recorded with its time, every refusal with its time and retry-after.

``latency(call_number)`` (with ``sleep``, the clock's) gives each write a trip: seconds until the
request arrives — when it is counted, as platforms count — and seconds until the answer is back.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.kernel import (
    Attachment,
    Event,
    MessageRef,
    Modal,
    OutMessage,
    Place,
    PlatformProfile,
    RateLimited,
)


@dataclass(frozen=True)
class Write:
    at: float
    kind: str
    message_id: str
    channel_id: str
    text: str
    from_model: bool


@dataclass
class Posted:
    ref: MessageRef
    text: str
    origin: Event | None
    history: list[str] = field(default_factory=list)


class RateLimitingSurface:
    def __init__(
        self,
        monotonic: Callable[[], float],
        profile: PlatformProfile | None = None,
        *,
        platform: str = "fake",
        flaky_every: int | None = None,
        flaky_retry_after: float = 0.7,
        latency: Callable[[int], tuple[float, float]] | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        assert latency is None or sleep is not None, "a latency needs the clock's sleep"
        self.platform = platform
        self.profile = profile or PlatformProfile()
        self.monotonic = monotonic
        self.flaky_every = flaky_every
        self.flaky_retry_after = flaky_retry_after
        self.writes: list[Write] = []
        self.messages: dict[str, Posted] = {}
        self.typing_at: list[float] = []
        self.rate_limited = 0
        self.refusals: list[tuple[float, float]] = []
        self.on_write: Callable[[Write], None] | None = None
        self.latency = latency
        self.sleep = sleep
        self._trips = itertools.count()
        self._calls = 0
        self._ids = itertools.count(1)
        self._channel_stamps: dict[str, deque[float]] = {}
        self._workspace_stamps: dict[str, deque[float]] = {}
        self._message_last: dict[str, float] = {}

    def _refuse(self, retry_after: float) -> None:
        self.rate_limited += 1
        self.refusals.append((self.monotonic(), retry_after))
        raise RateLimited(max(retry_after, 0.0))

    @staticmethod
    def _room(stamps: deque[float], capacity: int, seconds: float, now: float) -> float:
        while stamps and stamps[0] + seconds <= now:
            stamps.popleft()
        if len(stamps) < capacity:
            return 0.0
        return stamps[len(stamps) - capacity] + seconds - now

    def _spend(self, place: Place, message_id: str | None) -> float:
        now = self.monotonic()
        self._calls += 1
        if self.flaky_every and self._calls % self.flaky_every == 0:
            self._refuse(self.flaky_retry_after)
        profile = self.profile
        channel = self._channel_stamps.setdefault(place.channel_id, deque())
        wait = self._room(
            channel, profile.edits_per_window_per_channel, profile.edit_window_seconds, now
        )
        if wait > 0:
            self._refuse(wait)
        workspace = self._workspace_stamps.setdefault(place.workspace_id, deque())
        if profile.edits_per_minute_per_workspace is not None:
            wait = self._room(workspace, profile.edits_per_minute_per_workspace, 60.0, now)
            if wait > 0:
                self._refuse(wait)
        if message_id is not None and message_id in self._message_last:
            wait = (
                self._message_last[message_id]
                + (profile.min_seconds_between_edits_of_one_message)
                - now
            )
            if wait > 0:
                self._refuse(wait)
        channel.append(now)
        workspace.append(now)
        return now

    async def _trip(self) -> float:
        """Travel to the platform; returns the seconds the answer takes back."""
        if self.latency is None or self.sleep is None:
            return 0.0
        going, back = self.latency(next(self._trips))
        await self.sleep(going)
        return back

    async def _back(self, seconds: float) -> None:
        if seconds > 0 and self.sleep is not None:
            await self.sleep(seconds)

    def _check(self, message: OutMessage) -> None:
        assert message.text.strip(), "empty message"
        assert len(message.text) <= self.profile.max_text, (
            f"{len(message.text)} > {self.profile.max_text} characters"
        )

    def _record(self, write: Write) -> None:
        self.writes.append(write)
        self._message_last[write.message_id] = write.at
        if self.on_write is not None:
            self.on_write(write)

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        self._check(message)
        back = await self._trip()
        try:
            now = self._spend(place, None)
        finally:
            await self._back(back)
        ref = MessageRef(place, f"m{next(self._ids)}")
        self.messages[ref.message_id] = Posted(ref, message.text, origin, [message.text])
        self._record(
            Write(now, "send", ref.message_id, place.channel_id, message.text, message.from_model)
        )
        return ref

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        self._check(message)
        posted = self.messages[ref.message_id]
        back = await self._trip()
        try:
            now = self._spend(ref.place, ref.message_id)
        finally:
            await self._back(back)
        posted.text = message.text
        posted.history.append(message.text)
        self._record(
            Write(
                now, "edit", ref.message_id, ref.place.channel_id, message.text, message.from_model
            )
        )

    async def send_ephemeral(self, origin: Event, text: str) -> None:
        raise AssertionError("the renderer never posts ephemerals")

    async def open_modal(self, origin: Event, modal: Modal) -> None:
        raise AssertionError("the renderer never opens modals")

    async def typing(self, place: Place) -> None:
        self.typing_at.append(self.monotonic())

    async def start_thread(self, ref: MessageRef, name: str) -> Place:
        raise AssertionError("the renderer never starts threads")

    async def download(self, attachment: Attachment) -> bytes:
        raise AssertionError("the renderer never downloads")

    def texts_in(self, place: Place) -> list[str]:
        """Current texts of the messages posted in ``place``, oldest first."""
        return [p.text for p in self.messages.values() if p.ref.place == place]
