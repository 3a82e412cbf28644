"""Synthetic model answers for the streaming benchmark, played in real time.

A :class:`Script` is a deterministic answer (seeded): a few hundred word tokens at 30–50
tokens/s with jitter, starting at some offset. A :class:`Feed` plays one script into a queue on
its own schedule (a consumer that falls behind does not slow the "network") and logs when each
token arrived, which is what staleness is measured against.
"""

from __future__ import annotations

import asyncio
import bisect
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from bot.features.chat.renderer import StreamEnd

VOCABULARY = (
    "the a of to and in is it that for on with as was at by an be this from or are "
    "which but not have has stream token model answer message platform edit budget "
    "channel render text latency window bucket policy result final visible async "
    "python request response update quick brown fox jumps over lazy dog lorem ipsum "
    "dolor sit amet consectetur adipiscing"
)
WORDS: tuple[str, ...] = tuple(VOCABULARY.split())


@dataclass(frozen=True)
class Script:
    """One answer: ``tokens[i]`` arrives ``gaps[i]`` seconds after the previous one (the first
    ``gaps[0]`` after ``start``). Seconds are scenario seconds (before time scaling)."""

    name: str
    start: float
    tokens: tuple[str, ...]
    gaps: tuple[float, ...]

    @property
    def text(self) -> str:
        return "".join(self.tokens)

    @property
    def duration(self) -> float:
        return self.start + sum(self.gaps)


def make_script(
    name: str,
    rng: random.Random,
    *,
    token_count: int,
    rate: float,
    start: float,
    max_chars: int,
) -> Script:
    """An answer of ``token_count`` word tokens (fewer if ``max_chars`` is reached) at about
    ``rate`` tokens per second. No token ends in whitespace, so the received text never does."""
    tokens: list[str] = []
    gaps: list[float] = []
    length = 0
    mean_gap = 1.0 / rate
    for index in range(token_count):
        word = rng.choice(WORDS)
        if index == 0:
            token = word.capitalize()
        elif rng.random() < 0.04:
            token = ".\n\n" + word.capitalize()
        else:
            token = " " + word
        if length + len(token) > max_chars:
            break
        tokens.append(token)
        gaps.append(rng.uniform(0.5, 1.5) * mean_gap)
        length += len(token)
    return Script(name, start, tuple(tokens), tuple(gaps))


def make_scripts(
    count: int,
    *,
    seed: int,
    tokens: tuple[int, int] = (200, 400),
    rate: tuple[float, float] = (30.0, 50.0),
    stagger: float = 1.0,
    max_chars: int = 1900,
) -> list[Script]:
    """``count`` answers starting within ``stagger`` seconds of each other (deterministic)."""
    rng = random.Random(seed)
    return [
        make_script(
            f"s{index}",
            rng,
            token_count=rng.randint(*tokens),
            rate=rng.uniform(*rate),
            start=rng.uniform(0.0, stagger) if index else 0.0,
            max_chars=max_chars,
        )
        for index in range(count)
    ]


@dataclass
class Feed:
    """Plays a :class:`Script` in real time (``scale`` real seconds per scenario second)."""

    script: Script
    scale: float = 1.0
    received: str = ""
    arrivals: list[float] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    done: bool = False
    queue: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once every token was delivered (genbot's renderer reads a feed as
    :class:`~bot.api.TextDeltas`: :meth:`read`, :meth:`read_nowait`)."""
    read_all: bool = False
    held: list[str | None] = field(default_factory=list)

    async def play(self, started: float) -> None:
        """Deliver every token at its scheduled time after ``started`` (a monotonic time)."""
        due = started + self.script.start * self.scale
        try:
            for token, gap in zip(self.script.tokens, self.script.gaps, strict=True):
                due += gap * self.scale
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                self.received += token
                self.arrivals.append(time.monotonic())
                self.ends.append(len(self.received))
                self.queue.put_nowait(token)
        finally:
            self.done = True
            self.queue.put_nowait(None)
            self.ended.set()

    async def deltas(self) -> AsyncIterator[str | StreamEnd]:
        """The answer as a client reads it: deltas, then ``StreamEnd("stop")``."""
        while (token := await self.queue.get()) is not None:
            yield token
        yield StreamEnd("stop")

    async def wait(self) -> None:
        """Until a token was delivered that was not read, or every token was."""
        if not self.read_all and not self.held and self.queue.empty():
            self.held.append(await self.queue.get())

    def read_nowait(self) -> list[str | StreamEnd]:
        """The deltas delivered since the last read, without waiting."""
        return [] if self.read_all else self._deltas(self._queued())

    def _queued(self) -> list[str | None]:
        items, self.held = self.held, []
        while not self.queue.empty():
            items.append(self.queue.get_nowait())
        return items

    def _deltas(self, items: list[str | None]) -> list[str | StreamEnd]:
        deltas: list[str | StreamEnd] = [item for item in items if item is not None]
        if len(deltas) < len(items):
            self.read_all = True
            deltas.append(StreamEnd("stop"))
        return deltas

    @property
    def first_at(self) -> float | None:
        return self.arrivals[0] if self.arrivals else None

    @property
    def last_at(self) -> float | None:
        return self.arrivals[-1] if self.done and self.arrivals else None

    def waiting_since(self, shown_chars: int) -> float | None:
        """When the oldest character not among the first ``shown_chars`` arrived (None if
        everything received is shown)."""
        index = bisect.bisect_right(self.ends, shown_chars)
        return self.arrivals[index] if index < len(self.arrivals) else None
