"""The three ways of showing streamed answers that the streaming benchmark compares.

- ``genbot``: one :class:`bot.features.chat.renderer.StreamRenderer` per answer, all sharing one
  :class:`bot.outbox.pacing.Pacer` (what genbot runs).
- ``every-delta``: each answer edits its message after every delta it receives (deltas that
  arrive while an edit is in flight fold into the next edit, which carries the newest text).
- ``timer-1/s``: one global timer shared by all answers: sleep one second, write the newest text
  of the next answer (round-robin) that has something new, repeat.

Both baselines honour a 429 the naive way: sleep its retry-after, then carry on; their last
write (the final text) is retried the same way until it lands.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from bench.platform import BenchPlatform
from bench.streams import Feed
from bot.features.chat.renderer import StreamEnd, StreamRenderer
from bot.kernel import Command, MessageRef, OutMessage, Place, RateLimited, SurfaceRegistry, User
from bot.outbox import Outbox, Pacer

Policy = Callable[[Sequence[Feed], BenchPlatform, Place, float], Awaitable[None]]


def origin_of(feed: Feed, place: Place) -> Command:
    """The request a stream answers; its user id names the stream on the platform."""
    return Command(user=User(feed.script.name), place=place, name="chat")


async def genbot_policy(
    feeds: Sequence[Feed], platform: BenchPlatform, place: Place, scale: float
) -> None:
    """genbot's renderer: every answer rendered through one outbox (one pacer)."""
    outbox = Outbox(SurfaceRegistry([platform]), Pacer())
    renderers = [
        StreamRenderer(outbox, place, origin=origin_of(feed, place), final_timeout=120)
        for feed in feeds
    ]
    await asyncio.gather(
        *(renderer.render(feed) for renderer, feed in zip(renderers, feeds, strict=True))
    )


@dataclass
class Reader:
    """Reads one answer's deltas as they come; ``changed`` is set on each."""

    feed: Feed
    text: str = ""
    done: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, deltas: AsyncIterator[str | StreamEnd]) -> None:
        try:
            async for delta in deltas:
                if isinstance(delta, str):
                    self.text += delta
                self.changed.set()
        finally:
            self.done = True
            self.changed.set()


@dataclass
class Writer:
    """One answer's message as a baseline writes it (send first, then edits)."""

    platform: BenchPlatform
    place: Place
    origin: Command
    ref: MessageRef | None = None
    shown: str = ""

    async def write(self, text: str) -> None:
        """Show ``text``; raises :class:`RateLimited` like the platform."""
        message = OutMessage(text=text, from_model=True)
        if self.ref is None:
            self.ref = await self.platform.send(self.place, message, origin=self.origin)
        else:
            await self.platform.edit(self.ref, message)
        self.shown = text


async def _every_delta_one(feed: Feed, platform: BenchPlatform, place: Place) -> None:
    reader = Reader(feed)
    writer = Writer(platform, place, origin_of(feed, place))
    reading = asyncio.create_task(reader.run(feed.deltas()))
    try:
        while not (reader.done and writer.shown == reader.text):
            await reader.changed.wait()
            reader.changed.clear()
            if not reader.text or reader.text == writer.shown:
                continue
            try:
                await writer.write(reader.text)
            except RateLimited as limited:
                await asyncio.sleep(limited.retry_after)
                reader.changed.set()
    finally:
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading


async def every_delta_policy(
    feeds: Sequence[Feed], platform: BenchPlatform, place: Place, scale: float
) -> None:
    """Baseline (a): edit after every delta."""
    await asyncio.gather(*(_every_delta_one(feed, platform, place) for feed in feeds))


async def global_timer_policy(
    feeds: Sequence[Feed], platform: BenchPlatform, place: Place, scale: float
) -> None:
    """Baseline (b): one timer, one write per second, round-robin over answers with news."""
    readers = [Reader(feed) for feed in feeds]
    writers = [Writer(platform, place, origin_of(feed, place)) for feed in feeds]
    reading = [asyncio.create_task(r.run(f.deltas())) for r, f in zip(readers, feeds, strict=True)]
    cursor = 0
    try:
        while not all(r.done and w.shown == r.text for r, w in zip(readers, writers, strict=True)):
            await asyncio.sleep(1.0 * scale)
            for step in range(len(feeds)):
                index = (cursor + step) % len(feeds)
                text = readers[index].text
                if text and text != writers[index].shown:
                    cursor = index + 1
                    try:
                        await writers[index].write(text)
                    except RateLimited as limited:
                        await asyncio.sleep(limited.retry_after)
                    break
    finally:
        for task in reading:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


POLICIES: dict[str, Policy] = {
    "genbot": genbot_policy,
    "every-delta": every_delta_policy,
    "timer-1/s": global_timer_policy,
}
