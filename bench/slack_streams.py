"""The streaming benchmark's Slack scenario: native streaming against ``chat.update``.

N answers stream at once in one workspace, each in the thread of its own channel, through the
real Slack surface and renderer, against the fake Slack on loopback (real HTTP, real time), which
enforces Slack's windows per workspace and method with 429 and ``Retry-After``:
``chat.startStream`` / ``chat.stopStream`` Tier 2 (20 a minute), ``chat.appendStream`` Tier 4
(100), ``chat.update`` Tier 3 (50, and about one a second per message), ``chat.postMessage`` per
channel. The same answers (seeded) are played twice: once with native streaming, once in a
workspace that refuses it (``feature_not_enabled``), where genbot posts and updates. Each N plays
``answers`` answers per mode in runs of N; the runs of one N play side by side, each in a
workspace (fake Slack) of its own, and the figures pool them.

Staleness is read from the fake's record of what each message showed when: every
``SAMPLE_EVERY`` seconds from an answer's first token until its complete text was visible, how
many received characters were not shown yet and how old the oldest of them was.
"""

from __future__ import annotations

import asyncio
import bisect
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import SlackSurface
from adapters.slack.settings import SlackSettings
from bench.report import Table, percentile
from bench.streams import Feed, Script, make_scripts
from bot.features.chat.renderer import MARKER, StreamRenderer
from bot.kernel import Command, Place, SurfaceRegistry, User
from bot.outbox import Outbox, Pacer
from tests.fakes.slack import FakeSlack

SAMPLE_EVERY = 0.05
WRITES = frozenset(
    {
        "chat.postMessage",
        "chat.update",
        "chat.startStream",
        "chat.appendStream",
        "chat.stopStream",
    }
)
MODES = ("native", "chat.update")


@dataclass(frozen=True)
class SlackStreamingConfig:
    """What to run: N answers of ``tokens`` word tokens at ``rate`` tokens/s each."""

    streams: tuple[int, ...] = (1, 5, 20)
    tokens: tuple[int, int] = (200, 400)
    rate: tuple[float, float] = (30.0, 50.0)
    stagger: float = 1.0
    seed: int = 19
    answers: int = 20
    deadline: float = 240.0


FULL = SlackStreamingConfig()
QUICK = SlackStreamingConfig(streams=(1, 5), tokens=(80, 140), answers=5)


@dataclass
class SlackCell:
    """One mode's figures for one N (seconds are real seconds)."""

    mode: str
    streams: int
    writes: int = 0
    by_method: dict[str, int] = field(default_factory=dict)
    rate_limited: int = 0
    stale_chars: list[float] = field(default_factory=list)
    stale_seconds: list[float] = field(default_factory=list)
    first_visible: list[float] = field(default_factory=list)
    final_lag: list[float] = field(default_factory=list)
    exact: int = 0
    duration: float = 0.0
    finished: bool = True
    runs: int = 1

    def absorb(self, other: SlackCell) -> None:
        """Pool ``other`` (the same mode and N, another run) into this cell."""
        self.writes += other.writes
        for method, count in other.by_method.items():
            self.by_method[method] = self.by_method.get(method, 0) + count
        self.rate_limited += other.rate_limited
        for name in ("stale_chars", "stale_seconds", "first_visible", "final_lag"):
            getattr(self, name).extend(getattr(other, name))
        self.exact += other.exact
        self.duration = max(self.duration, other.duration)
        self.finished = self.finished and other.finished
        self.runs += other.runs


def shown_at(fake: FakeSlack, channel: str, moment: float) -> str:
    """What a reader of ``channel``'s thread saw at ``moment`` (genbot's messages in order)."""
    parts = []
    for message in fake.bot_messages(channel):
        written = bisect.bisect_right(message.timeline, moment, key=lambda entry: entry[0])
        if written:
            parts.append(message.timeline[written - 1][1].removesuffix(MARKER))
    return "".join(parts)


def landed_at(fake: FakeSlack, channel: str, text: str) -> float | None:
    """When the complete ``text`` became visible in ``channel`` (None if it never did)."""
    moments = sorted({at for m in fake.bot_messages(channel) for at, _ in m.timeline})
    return next((at for at in moments if shown_at(fake, channel, at) == text), None)


async def run_mode(mode: str, scripts: Sequence[Script], config: SlackStreamingConfig) -> SlackCell:
    """``scripts`` answered in ``mode`` against a fresh fake Slack."""
    cell = SlackCell(mode, len(scripts))
    async with FakeSlack() as fake:
        client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
        surface = SlackSurface(
            client,
            profile=SlackSettings().platform_profile(),
            bot_token=fake.bot_token,
            api_url=fake.api_url,
        )
        outbox = Outbox(SurfaceRegistry([surface]), Pacer())
        places = []
        for index, script in enumerate(scripts):
            question = fake.user_says(f"question {script.name}", channel=f"C{index}")
            places.append(Place("slack", fake.team_id, f"C{index}", question.ts))
        if mode == "chat.update":
            fake.streaming_refused[fake.team_id] = "feature_not_enabled"
        feeds = [Feed(script) for script in scripts]
        started = time.monotonic() + 0.05
        players = [asyncio.create_task(feed.play(started)) for feed in feeds]
        renderers = [
            StreamRenderer(
                outbox,
                place,
                origin=Command(user=User("U1"), place=place, name="chat"),
                final_timeout=config.deadline,
            )
            for place in places
        ]
        try:
            async with asyncio.timeout(config.deadline):
                await asyncio.gather(*(r.render(f) for r, f in zip(renderers, feeds, strict=True)))
        except TimeoutError:
            cell.finished = False
        finally:
            cell.duration = time.monotonic() - started
            for task in players:
                task.cancel()
            await asyncio.gather(*players, return_exceptions=True)
            await surface.close()
        measure(cell, fake, feeds, places)
    return cell


def measure(
    cell: SlackCell, fake: FakeSlack, feeds: Sequence[Feed], places: Sequence[Place]
) -> None:
    """Writes, 429s and staleness of one run."""
    writes = [c for c in fake.calls if c.method in WRITES and c.ok]
    cell.writes = len(writes)
    for call in writes:
        cell.by_method[call.method] = cell.by_method.get(call.method, 0) + 1
    cell.rate_limited = len(fake.ratelimited)
    for feed, place in zip(feeds, places, strict=True):
        channel, text = place.channel_id, feed.script.text
        landed = landed_at(fake, channel, text)
        messages = fake.bot_messages(channel)
        if messages and messages[0].timeline and feed.first_at is not None:
            cell.first_visible.append(messages[0].timeline[0][0] - feed.first_at)
        if landed is not None and feed.last_at is not None:
            cell.exact += 1
            cell.final_lag.append(max(landed - feed.last_at, 0.0))
        if feed.first_at is None:
            continue
        horizon = landed if landed is not None else time.monotonic()
        moment = feed.first_at
        while moment <= horizon:
            arrived = bisect.bisect_right(feed.arrivals, moment)
            received = feed.ends[arrived - 1] if arrived else 0
            visible = shown_at(fake, channel, moment)
            shown = len(visible) if text.startswith(visible) else 0
            chars = max(received - shown, 0)
            oldest = feed.waiting_since(shown)
            cell.stale_chars.append(chars)
            cell.stale_seconds.append(0.0 if oldest is None or not chars else moment - oldest)
            moment += SAMPLE_EVERY


async def run_slack_streaming(config: SlackStreamingConfig = FULL) -> list[SlackCell]:
    """Both modes for every N, one after the other, on the same answers: ``config.answers``
    per N in runs of N played side by side (a workspace each), pooled."""
    cells = []
    for count in config.streams:
        runs = [
            make_scripts(
                count,
                seed=config.seed + count + 100 * run,
                tokens=config.tokens,
                rate=config.rate,
                stagger=config.stagger,
                max_chars=11000,
            )
            for run in range(math.ceil(config.answers / count))
        ]
        for mode in MODES:
            played = await asyncio.gather(*(run_mode(mode, s, config) for s in runs))
            for more in played[1:]:
                played[0].absorb(more)
            cells.append(played[0])
    return cells


def slack_table(cells: Sequence[SlackCell], config: SlackStreamingConfig) -> Table:
    """Native streaming and chat.update side by side for each N."""
    table = Table(
        "Streaming on Slack: native (chat.*Stream) vs chat.update, N answers in one workspace",
        [
            "N",
            "mode",
            "writes",
            "by method",
            "429s",
            "stale chars p50",
            "p95",
            "stale s p50",
            "p95",
            "first shown s p50",
            "final lag s p50",
            "p95",
            "exact final",
            "run s",
        ],
    )
    for cell in cells:
        methods = ", ".join(
            f"{name.removeprefix('chat.')} {n}" for name, n in sorted(cell.by_method.items())
        )
        table.add(
            cell.streams,
            cell.mode,
            cell.writes,
            methods,
            cell.rate_limited,
            percentile(cell.stale_chars, 0.5),
            percentile(cell.stale_chars, 0.95),
            percentile(cell.stale_seconds, 0.5),
            percentile(cell.stale_seconds, 0.95),
            percentile(cell.first_visible, 0.5),
            percentile(cell.final_lag, 0.5),
            percentile(cell.final_lag, 0.95),
            f"{cell.exact}/{cell.streams * cell.runs}",
            cell.duration if cell.finished else f">{config.deadline:.0f} (cut)",
        )
    low, high = config.tokens
    table.notes = [
        f"Answers: {low}–{high} tokens at {config.rate[0]:.0f}–{config.rate[1]:.0f} tokens/s, "
        f"starts spread over {config.stagger:.1f} s, each in the thread of its own channel of "
        f"one workspace; {config.answers} answers per N and mode in runs of N (a workspace "
        "each, side by side), pooled; the real Slack surface and renderer against the fake "
        "Slack over loopback HTTP, which answers 429 beyond Slack's windows "
        "(startStream/stopStream 20 a minute, appendStream 100, chat.update 50 and ~1/s per "
        "message). chat.update: the "
        f"workspace refuses streaming. Staleness sampled every {SAMPLE_EVERY} s from an "
        "answer's first token until its complete text was visible. Real seconds.",
    ]
    return table


async def main(quick: bool = False) -> list[Table]:
    """The Slack scenario as the streaming benchmark runs it."""
    config = QUICK if quick else FULL
    return [slack_table(await run_slack_streaming(config), config)]
