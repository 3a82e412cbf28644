"""Benchmark 1 — streaming: N concurrent answers in one channel under a 5-per-5-s edit bucket.

For each N, genbot's renderer and the two baselines of :mod:`bench.policies` run at the same
time, each against its own :class:`bench.platform.BenchPlatform` (same limits, same latency)
and its own copy of the same seeded answers. A sampler reads every answer's visible text every
0.1 scenario seconds and measures how far it lags the received text, in characters and in
seconds (age of the oldest received character not shown yet).

``scale`` compresses time (the platform window, token pace, latency and timer all shrink) for
``--quick`` runs and smoke tests; seconds are reported in scenario seconds (divided by
``scale``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from bench.platform import DISCORD_LIMITS, BenchPlatform
from bench.policies import POLICIES
from bench.report import Table, percentile
from bench.streams import Feed, Script, make_scripts
from bot.events import Place, SurfaceLimits
from bot.render import MARKER

SAMPLE_EVERY = 0.1
PLACE = Place("bench", "w1", "c1")


@dataclass(frozen=True)
class StreamingConfig:
    """What to run. ``deadline`` (scenario seconds) cuts a policy that never finishes."""

    streams: tuple[int, ...] = (1, 5, 20)
    tokens: tuple[int, int] = (200, 400)
    rate: tuple[float, float] = (30.0, 50.0)
    stagger: float = 1.0
    latency: float = 0.05
    scale: float = 1.0
    seed: int = 7
    deadline: float = 150.0
    limits: SurfaceLimits = DISCORD_LIMITS
    policies: tuple[str, ...] = tuple(POLICIES)


FULL = StreamingConfig()
QUICK = StreamingConfig(scale=0.25, tokens=(120, 200))


@dataclass
class StreamingCell:
    """One policy's figures for one N. Times in scenario seconds."""

    policy: str
    streams: int
    writes: int = 0
    rate_limited: int = 0
    stale_chars: list[float] = field(default_factory=list)
    stale_seconds: list[float] = field(default_factory=list)
    live_chars: list[float] = field(default_factory=list)
    live_seconds: list[float] = field(default_factory=list)
    tail_chars: list[float] = field(default_factory=list)
    tail_seconds: list[float] = field(default_factory=list)
    first_visible: list[float] = field(default_factory=list)
    final_lag: list[float] = field(default_factory=list)
    exact: int = 0
    duration: float = 0.0
    finished: bool = True


def shown_chars(visible: str, received: str) -> int:
    """How many leading characters of ``received`` the visible text shows (marker ignored)."""
    if visible.endswith(MARKER):
        visible = visible[: -len(MARKER)]
    if received.startswith(visible):
        return len(visible)
    common = 0
    for a, b in zip(visible, received, strict=False):
        if a != b:
            break
        common += 1
    return common


class Sampler:
    """Samples staleness of every feed on one platform until stopped."""

    def __init__(self, feeds: Sequence[Feed], platform: BenchPlatform, scale: float) -> None:
        self.feeds = feeds
        self.platform = platform
        self.scale = scale
        self.chars: list[float] = []
        self.seconds: list[float] = []
        self.live_chars: list[float] = []
        self.live_seconds: list[float] = []
        self.tail_chars: list[float] = []
        self.tail_seconds: list[float] = []

    def settled(self, feed: Feed) -> bool:
        return feed.done and self.platform.visible(feed.script.name) == feed.received

    def sample(self) -> None:
        now = time.monotonic()
        for feed in self.feeds:
            if not feed.arrivals or self.settled(feed):
                continue
            shown = shown_chars(self.platform.visible(feed.script.name), feed.received)
            chars = len(feed.received) - shown
            since = feed.waiting_since(shown)
            seconds = 0.0 if since is None else (now - since) / self.scale
            self.chars.append(chars)
            self.seconds.append(seconds)
            (self.tail_chars if feed.done else self.live_chars).append(chars)
            (self.tail_seconds if feed.done else self.live_seconds).append(seconds)

    async def run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(SAMPLE_EVERY * self.scale)


def settled_at(platform: BenchPlatform, feed: Feed) -> float | None:
    """When the stream's full text became visible (None if it never did)."""
    ids = platform.by_stream.get(feed.script.name, [])
    if platform.visible(feed.script.name) != feed.script.text:
        return None
    moments = []
    for message_id in ids:
        history = platform.messages[message_id].history
        final = history[-1][1]
        moments.append(next(at for at, text in history if text == final))
    return max(moments) if moments else None


async def run_policy(
    name: str, scripts: Sequence[Script], config: StreamingConfig, started: float
) -> StreamingCell:
    """One policy against its own platform and its own feeds of ``scripts``."""
    limits = replace(
        config.limits, edit_window_seconds=config.limits.edit_window_seconds * config.scale
    )
    platform = BenchPlatform(limits, latency=config.latency * config.scale)
    feeds = [Feed(script, config.scale) for script in scripts]
    sampler = Sampler(feeds, platform, config.scale)
    players = [asyncio.create_task(feed.play(started)) for feed in feeds]
    sampling = asyncio.create_task(sampler.run())
    cell = StreamingCell(name, len(scripts))
    try:
        async with asyncio.timeout(config.deadline * config.scale):
            await POLICIES[name](feeds, platform, PLACE, config.scale)
    except TimeoutError:
        cell.finished = False
    finally:
        cell.duration = (time.monotonic() - started) / config.scale
        for task in [*players, sampling]:
            task.cancel()
        await asyncio.gather(*players, sampling, return_exceptions=True)
    sampler.sample()
    cell.writes = platform.accepted
    cell.rate_limited = platform.rate_limited
    cell.stale_chars = sampler.chars
    cell.stale_seconds = sampler.seconds
    cell.live_chars, cell.live_seconds = sampler.live_chars, sampler.live_seconds
    cell.tail_chars, cell.tail_seconds = sampler.tail_chars, sampler.tail_seconds
    for feed in feeds:
        ids = platform.by_stream.get(feed.script.name, [])
        if ids and feed.first_at is not None:
            shown_at = platform.messages[ids[0]].history[0][0]
            cell.first_visible.append((shown_at - feed.first_at) / config.scale)
        landed = settled_at(platform, feed)
        if landed is not None and feed.last_at is not None:
            cell.exact += 1
            cell.final_lag.append(max(landed - feed.last_at, 0.0) / config.scale)
    return cell


async def run_streaming(config: StreamingConfig = FULL) -> list[StreamingCell]:
    """Every N in ``config.streams`` in turn; within one N every policy runs concurrently."""
    cells: list[StreamingCell] = []
    for count in config.streams:
        scripts = make_scripts(
            count,
            seed=config.seed + count,
            tokens=config.tokens,
            rate=config.rate,
            stagger=config.stagger,
            max_chars=config.limits.max_text - 100,
        )
        started = time.monotonic() + 0.05
        cells.extend(
            await asyncio.gather(
                *(run_policy(name, scripts, config, started) for name in config.policies)
            )
        )
    return cells


def streaming_table(cells: Sequence[StreamingCell], config: StreamingConfig) -> Table:
    """Policies side by side for each N."""
    table = Table(
        "Streaming: N concurrent answers in one channel (edit bucket 5 per 5 s, 429 beyond)",
        [
            "N",
            "policy",
            "writes",
            "429s",
            "stale chars p50",
            "p95",
            "stale s p50",
            "p95",
            "first shown s p50",
            "p95",
            "final lag s p50",
            "max",
            "exact final",
            "run s",
        ],
    )
    for cell in cells:
        table.add(
            cell.streams,
            cell.policy,
            cell.writes,
            cell.rate_limited,
            percentile(cell.stale_chars, 0.5),
            percentile(cell.stale_chars, 0.95),
            percentile(cell.stale_seconds, 0.5),
            percentile(cell.stale_seconds, 0.95),
            percentile(cell.first_visible, 0.5),
            percentile(cell.first_visible, 0.95),
            percentile(cell.final_lag, 0.5),
            max(cell.final_lag, default=None),
            f"{cell.exact}/{cell.streams}",
            cell.duration if cell.finished else f">{config.deadline:.0f} (cut)",
        )
    low, high = config.tokens
    table.notes = [
        f"Answers: {low}–{high} tokens at {config.rate[0]:.0f}–{config.rate[1]:.0f} tokens/s, "
        f"starts spread over {config.stagger:.1f} s, seed {config.seed}+N; platform round trip "
        f"{config.latency * 1000:.0f} ms. Staleness sampled every {SAMPLE_EVERY} s per answer "
        "from its first token until its final text is visible. Seconds are scenario seconds"
        + (f" (run compressed ×{config.scale})." if config.scale != 1.0 else "."),
        "every-delta: edit after every delta; timer-1/s: one global 1-edit-per-second timer, "
        "round-robin. Both sleep retry_after on a 429 and carry on.",
    ]
    return table


def split_table(cells: Sequence[StreamingCell]) -> Table:
    """The staleness samples split: while the answer streams, and after its last token until
    its final text is visible (the main table pools both)."""
    table = Table(
        "Streaming: staleness while answers stream vs after their last token",
        [
            "N",
            "policy",
            "streaming: samples",
            "chars p50",
            "p95",
            "s p50",
            "p95",
            "after last token: samples",
            "chars p50",
            "s p50",
        ],
    )
    for cell in cells:
        table.add(
            cell.streams,
            cell.policy,
            len(cell.live_chars),
            percentile(cell.live_chars, 0.5),
            percentile(cell.live_chars, 0.95),
            percentile(cell.live_seconds, 0.5),
            percentile(cell.live_seconds, 0.95),
            len(cell.tail_chars),
            percentile(cell.tail_chars, 0.5),
            percentile(cell.tail_seconds, 0.5),
        )
    table.notes = [
        "Same samples as the table above, split by whether the answer was still streaming. "
        "After the last token a sample counts until the complete text is visible, so a policy "
        "that lands final texts late has more samples there."
    ]
    return table


async def main(quick: bool = False) -> list[Table]:
    """The benchmark as ``python -m bench streaming [--quick]`` runs it."""
    config = QUICK if quick else FULL
    cells = await run_streaming(config)
    return [streaming_table(cells, config), split_table(cells)]
