"""Benchmark 1 — streaming: N concurrent answers in one channel under a 5-per-5-s edit bucket.

For each N, genbot's renderer and the two baselines of :mod:`bench.policies` run at the same
time, each against its own :class:`bench.platform.BenchPlatform` (same profile, same latency)
and its own copy of the same seeded answers; this is repeated for each seed of the config and
the figures pool all runs.

Staleness is read afterwards from the platform's write history, at the same moments for every
policy: every ``SAMPLE_EVERY`` scenario seconds from an answer's first token until the slowest
policy showed its complete text. A sample is how far the visible text lags the received text, in
characters and in seconds (age of the oldest received character not shown yet); once a policy
shows the complete text, its samples are 0. (Sampling each policy only until its own final text was
visible gave a policy that lands late more samples, of moderate lag, which lowered its median.)

``scale`` compresses time (the platform window, token pace, latency and timer all shrink) for
``--quick`` runs and smoke tests; seconds are reported in scenario seconds (divided by
``scale``).
"""

from __future__ import annotations

import asyncio
import bisect
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from bench import charts, slack_streams
from bench.charts import STALENESS_PNG, draw
from bench.platform import DISCORD_PROFILE, BenchPlatform
from bench.policies import POLICIES
from bench.probe import PROBE_EVERY, Probe
from bench.report import Table, percentile
from bench.streams import Feed, Script, make_scripts
from bot.features.chat.renderer import MARKER
from bot.kernel import Place, PlatformProfile

SAMPLE_EVERY = 0.02
"""Scenario seconds between staleness samples. A 0.1-s grid kept step with the 1-s cadence of a
lone answer's writes and always sampled it at the same moments after a write, which biased its
low percentiles; 0.02 s and finer grids give the same figures."""
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
    answers: int = 400
    streams_at_once: int = 60
    deadline: float = 150.0
    profile: PlatformProfile = DISCORD_PROFILE
    policies: tuple[str, ...] = tuple(POLICIES)

    def seeds(self, count: int) -> list[int]:
        """One seed per run of ``count`` answers (``seed``, ``seed + 100``, …): enough runs
        for ``answers`` answers in all, so every N weighs the same."""
        return [self.seed + 100 * run for run in range(math.ceil(self.answers / count))]

    def at_once(self, count: int) -> int:
        """How many runs of ``count`` answers play at the same time (each policy then has at
        most ``streams_at_once`` answers in flight)."""
        return max(1, self.streams_at_once // count)


FULL = StreamingConfig()
QUICK = StreamingConfig(scale=0.25, tokens=(120, 200), answers=40)


@dataclass
class StreamingCell:
    """One policy's figures for one N. Times in scenario seconds."""

    policy: str
    streams: int
    writes: int = 0
    rate_limited: int = 0
    stale_chars: list[float] = field(default_factory=list)
    stale_seconds: list[float] = field(default_factory=list)
    stale_at: list[float] = field(default_factory=list)
    """When each staleness sample was taken: seconds since its answer's first token."""
    live_chars: list[float] = field(default_factory=list)
    live_seconds: list[float] = field(default_factory=list)
    tail_chars: list[float] = field(default_factory=list)
    tail_seconds: list[float] = field(default_factory=list)
    first_visible: list[float] = field(default_factory=list)
    final_lag: list[float] = field(default_factory=list)
    exact: int = 0
    duration: float = 0.0
    finished: bool = True
    runs: int = 1

    def absorb(self, other: StreamingCell) -> None:
        """Pool ``other`` (the same policy and N, another seed) into this cell."""
        self.writes += other.writes
        self.rate_limited += other.rate_limited
        for name in (
            "stale_chars",
            "stale_seconds",
            "stale_at",
            "live_chars",
            "live_seconds",
            "tail_chars",
            "tail_seconds",
            "first_visible",
            "final_lag",
        ):
            getattr(self, name).extend(getattr(other, name))
        self.exact += other.exact
        self.duration = max(self.duration, other.duration)
        self.finished = self.finished and other.finished
        self.runs += other.runs


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


def visible_at(platform: BenchPlatform, stream: str, moment: float) -> str:
    """What a reader saw of ``stream`` at ``moment``: each message's text as last written by
    then, oldest message first."""
    parts = []
    for message_id in platform.by_stream.get(stream, ()):
        history = platform.messages[message_id].history
        written = bisect.bisect_right(history, moment, key=lambda entry: entry[0])
        if written:
            parts.append(history[written - 1][1])
    return "".join(parts)


@dataclass
class PolicyRun:
    """One policy's platform and feeds after its run; sampled once every policy has finished."""

    cell: StreamingCell
    platform: BenchPlatform
    feeds: list[Feed]
    started: float
    ended: float

    def landed(self) -> list[float | None]:
        """When each stream's exact final text became visible (None if it never did)."""
        return [settled_at(self.platform, feed) for feed in self.feeds]


def sample(run: PolicyRun, horizons: Sequence[float], step: float, scale: float) -> None:
    """Fill ``run.cell``'s staleness samples: every ``step`` seconds from each answer's scheduled
    first token to its horizon (the same moments for every policy), reading what the platform
    showed and what had been received then. Once the exact final text is visible a sample is 0
    (counted in ``stale_*`` only, not in ``live_*`` or ``tail_*``)."""
    cell = run.cell
    for feed, horizon, landed in zip(run.feeds, horizons, run.landed(), strict=True):
        anchor = run.started + (feed.script.start + feed.script.gaps[0]) * scale
        ticks = 0
        while (moment := anchor + ticks * step) <= horizon:
            ticks += 1
            cell.stale_at.append((moment - anchor) / scale)
            if landed is not None and moment >= landed:
                cell.stale_chars.append(0)
                cell.stale_seconds.append(0.0)
                continue
            arrived = bisect.bisect_right(feed.arrivals, moment)
            received_len = feed.ends[arrived - 1] if arrived else 0
            received = feed.received[:received_len]
            shown = shown_chars(visible_at(run.platform, feed.script.name, moment), received)
            chars = received_len - shown
            oldest = feed.waiting_since(shown)
            seconds = 0.0 if oldest is None or chars == 0 else (moment - oldest) / scale
            streaming = feed.last_at is None or moment < feed.last_at
            cell.stale_chars.append(chars)
            cell.stale_seconds.append(seconds)
            (cell.live_chars if streaming else cell.tail_chars).append(chars)
            (cell.live_seconds if streaming else cell.tail_seconds).append(seconds)


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
) -> PolicyRun:
    """One policy against its own platform and its own feeds of ``scripts``."""
    profile = replace(
        config.profile, edit_window_seconds=config.profile.edit_window_seconds * config.scale
    )
    platform = BenchPlatform(profile, latency=config.latency * config.scale)
    feeds = [Feed(script, config.scale) for script in scripts]
    players = [asyncio.create_task(feed.play(started)) for feed in feeds]
    cell = StreamingCell(name, len(scripts))
    try:
        async with asyncio.timeout(config.deadline * config.scale):
            await POLICIES[name](feeds, platform, PLACE, config.scale)
    except TimeoutError:
        cell.finished = False
    finally:
        ended = time.monotonic()
        cell.duration = (ended - started) / config.scale
        for task in players:
            task.cancel()
        await asyncio.gather(*players, return_exceptions=True)
    cell.writes = platform.accepted
    cell.rate_limited = platform.rate_limited
    for feed in feeds:
        ids = platform.by_stream.get(feed.script.name, [])
        if ids and feed.first_at is not None:
            shown_at = platform.messages[ids[0]].history[0][0]
            cell.first_visible.append((shown_at - feed.first_at) / config.scale)
        landed = settled_at(platform, feed)
        if landed is not None and feed.last_at is not None:
            cell.exact += 1
            cell.final_lag.append(max(landed - feed.last_at, 0.0) / config.scale)
    return PolicyRun(cell, platform, feeds, started, ended)


def common_horizons(runs: Sequence[PolicyRun]) -> list[float]:
    """For each stream, when the slowest policy showed its final text (or stopped trying)."""
    ends = [[run.ended if moment is None else moment for moment in run.landed()] for run in runs]
    return [max(column) for column in zip(*ends, strict=True)]


async def run_seed(count: int, seed: int, config: StreamingConfig) -> list[PolicyRun]:
    """Every policy on the same ``count`` answers (from ``seed``) at the same time."""
    scripts = make_scripts(
        count,
        seed=seed + count,
        tokens=config.tokens,
        rate=config.rate,
        stagger=config.stagger,
        max_chars=config.profile.max_text - 100,
    )
    started = time.monotonic() + 0.05
    return list(
        await asyncio.gather(
            *(run_policy(name, scripts, config, started) for name in config.policies)
        )
    )


def sampled(runs: Sequence[PolicyRun], config: StreamingConfig) -> list[StreamingCell]:
    """The cells of one seed's runs, each policy sampled over the same span per answer (see
    :func:`sample`)."""
    horizons = common_horizons(runs)
    for run in runs:
        sample(run, horizons, SAMPLE_EVERY * config.scale, config.scale)
    return [run.cell for run in runs]


async def run_streaming(config: StreamingConfig = FULL) -> tuple[list[StreamingCell], Probe]:
    """Every N in ``config.streams`` in turn, played once per seed of ``config.seeds(N)``
    (``config.at_once(N)`` runs at the same time, sampled once all of them ended, so sampling
    never delays a run); a policy's figures for one N pool all its runs. The probe measured the
    event loop meanwhile."""
    probe = Probe()
    probing = asyncio.create_task(probe.run())
    cells: list[StreamingCell] = []
    try:
        for count in config.streams:
            seeds = config.seeds(count)
            step = config.at_once(count)
            pooled: list[StreamingCell] = []
            for first in range(0, len(seeds), step):
                batch = seeds[first : first + step]
                played = await asyncio.gather(*(run_seed(count, s, config) for s in batch))
                probing.cancel()  # sampling blocks the loop while no run plays: not their lag
                await asyncio.gather(probing, return_exceptions=True)
                for runs in played:
                    seeded = sampled(runs, config)
                    if not pooled:
                        pooled = seeded
                        continue
                    for cell, more in zip(pooled, seeded, strict=True):
                        cell.absorb(more)
                probing = asyncio.create_task(probe.run())
            cells.extend(pooled)
    finally:
        probing.cancel()
        await asyncio.gather(probing, return_exceptions=True)
    return cells, probe


def streaming_table(
    cells: Sequence[StreamingCell], config: StreamingConfig, probe: Probe | None = None
) -> Table:
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
            "p95",
            "exact final",
            "longest run s",
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
            percentile(cell.final_lag, 0.95),
            f"{cell.exact}/{cell.streams * cell.runs}",
            cell.duration if cell.finished else f">{config.deadline:.0f} (cut)",
        )
    low, high = config.tokens
    table.notes = [
        f"Answers: {low}–{high} tokens at {config.rate[0]:.0f}–{config.rate[1]:.0f} tokens/s, "
        f"starts spread over {config.stagger:.1f} s; {config.answers} answers per N and "
        f"policy in runs of N (seeds {config.seed}+N, {config.seed + 100}+N, …), pooled; "
        "platform round trip "
        f"{config.latency * 1000:.0f} ms. Staleness sampled every {SAMPLE_EVERY} s per answer, "
        "at the same moments for every policy: from its first token until the slowest policy "
        "showed its complete text (0 once a policy shows it). First shown: first token → first "
        "message visible; final lag: last token → complete text visible. Seconds are scenario "
        "seconds" + (f" (run compressed ×{config.scale})." if config.scale != 1.0 else "."),
        "every-delta: edit after every delta; timer-1/s: one global 1-edit-per-second timer, "
        "round-robin. Both sleep retry_after on a 429 and carry on.",
    ]
    if probe is not None and probe.lag:
        table.notes.append(
            f"Event-loop lag during the runs (overshoot of a {PROBE_EVERY * 1000:.0f} ms sleep): "
            f"p99 {percentile(probe.lag, 0.99) * 1000:.1f} ms, max {max(probe.lag) * 1000:.1f} ms."
        )
    return table


def split_table(cells: Sequence[StreamingCell]) -> Table:
    """The staleness samples split: while the answer streams, and after its last token until
    its final text is visible (the main table also counts the 0s after that), with the worst
    final lag."""
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
            "final lag s max",
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
            max(cell.final_lag, default=None),
        )
    table.notes = [
        "The samples of the table above taken before the complete text was visible, split by "
        "whether the answer was still streaming (the same moments for every policy) or past "
        "its last token (a policy that lands final texts late has more of those)."
    ]
    return table


async def main(quick: bool = False) -> list[Table]:
    """The benchmark as ``python -m bench streaming [--quick]`` runs it."""
    config = QUICK if quick else FULL
    cells, probe = await run_streaming(config)
    tables = [streaming_table(cells, config, probe), split_table(cells)]
    if not quick:
        tables[0].notes.append(draw(lambda: charts.streaming_staleness(cells, STALENESS_PNG)))
    return [*tables, *await slack_streams.main(quick)]
