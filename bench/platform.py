"""A fake chat platform for the streaming benchmark: one edit bucket per channel, answered 429.

Every ``send`` and ``edit`` takes a round trip of ``latency`` seconds (half on the way in,
half on the way out) and counts against its channel: more than
``profile.edits_per_window_per_channel`` writes in any ``profile.edit_window_seconds`` span are
refused with :class:`bot.kernel.surface.RateLimited` carrying the time until the bucket has room, as
Discord answers 429. Messages remember which stream they belong to through the ``origin``
event's user id, so the benchmark can read what each stream currently shows; the wall-clock
time of the first write carrying images is kept per message (job results).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Callable
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
    SurfaceError,
)

DISCORD_PROFILE = PlatformProfile(
    max_text=2000, edits_per_window_per_channel=5, edit_window_seconds=5
)


@dataclass
class Shown:
    """A message on the fake platform and the stream it answers."""

    stream: str
    text: str
    history: list[tuple[float, str]] = field(default_factory=list)


class BenchPlatform:
    """A :class:`bot.kernel.surface.Surface` enforcing a per-channel write bucket in real time."""

    def __init__(
        self,
        profile: PlatformProfile = DISCORD_PROFILE,
        *,
        latency: float = 0.05,
        platform: str = "bench",
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.platform = platform
        self.profile = profile
        self.latency = latency
        self.monotonic = monotonic
        self.messages: dict[str, Shown] = {}
        self.by_stream: dict[str, list[str]] = {}
        self.accepted = 0
        self.sends = 0
        self.edits = 0
        self.rate_limited = 0
        self.typing_calls = 0
        self.ephemerals: list[tuple[Event, str]] = []
        self.images_at: dict[str, float] = {}
        self._stamps: dict[str, deque[float]] = {}
        self._ids = itertools.count(1)

    async def _arrive(self, place: Place) -> float:
        """Travel to the platform, count the write or travel back with a 429."""
        await asyncio.sleep(self.latency / 2)
        try:
            return self._spend(place)
        except RateLimited:
            await asyncio.sleep(self.latency / 2)
            raise

    def _spend(self, place: Place) -> float:
        now = self.monotonic()
        stamps = self._stamps.setdefault(place.channel_id, deque())
        window = self.profile.edit_window_seconds
        while stamps and stamps[0] + window <= now:
            stamps.popleft()
        capacity = self.profile.edits_per_window_per_channel
        if len(stamps) >= capacity:
            self.rate_limited += 1
            raise RateLimited(stamps[len(stamps) - capacity] + window - now)
        stamps.append(now)
        self.accepted += 1
        return now

    def _check(self, message: OutMessage) -> None:
        if not message.text.strip() and not message.images:
            raise SurfaceError("cannot send an empty message")
        if len(message.text) > self.profile.max_text:
            raise SurfaceError(f"{len(message.text)} > {self.profile.max_text} characters")

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        """Post a message; its stream is ``origin.user.id`` (``"?"`` without an origin)."""
        self._check(message)
        now = await self._arrive(place)
        ref = MessageRef(place, f"m{next(self._ids)}")
        stream = origin.user.id if origin is not None else "?"
        self.messages[ref.message_id] = Shown(stream, message.text, [(now, message.text)])
        self.by_stream.setdefault(stream, []).append(ref.message_id)
        self.sends += 1
        self._note_images(ref.message_id, message)
        await asyncio.sleep(self.latency / 2)
        return ref

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        """Replace a message's text."""
        self._check(message)
        shown = self.messages[ref.message_id]
        now = await self._arrive(ref.place)
        shown.text = message.text
        shown.history.append((now, message.text))
        self.edits += 1
        self._note_images(ref.message_id, message)
        await asyncio.sleep(self.latency / 2)

    def _note_images(self, message_id: str, message: OutMessage) -> None:
        if message.images and message_id not in self.images_at:
            self.images_at[message_id] = time.time()

    def visible(self, stream: str) -> str:
        """What a reader sees of ``stream`` now: its messages' texts joined, oldest first."""
        return "".join(self.messages[mid].text for mid in self.by_stream.get(stream, ()))

    async def typing(self, place: Place) -> None:
        """Typing indicators are free here (they do not count against the edit bucket)."""
        self.typing_calls += 1

    async def send_ephemeral(self, origin: Event, text: str) -> None:
        """Recorded (genbot reports user-facing problems this way)."""
        self.ephemerals.append((origin, text))

    async def open_modal(self, origin: Event, modal: Modal) -> None:
        raise SurfaceError("not used by the benchmark")

    async def start_thread(self, ref: MessageRef, name: str) -> Place:
        """A new thread on ``ref`` (free: it does not count against the edit bucket)."""
        return ref.place.in_thread(f"t{next(self._ids)}")

    async def download(self, attachment: Attachment) -> bytes:
        raise SurfaceError("not used by the benchmark")
