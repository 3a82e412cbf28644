"""Smoke run of the streaming benchmark, time-compressed: structure and correctness only."""

from __future__ import annotations

import asyncio
import time

import pytest

from bench.__main__ import parse
from bench.platform import BenchPlatform
from bench.policies import POLICIES
from bench.streaming import (
    PolicyRun,
    StreamingCell,
    StreamingConfig,
    run_streaming,
    sample,
    shown_chars,
    split_table,
    streaming_table,
)
from bench.streams import Feed, Script, make_scripts
from bot.features.chat.renderer import MARKER, StreamEnd
from bot.kernel import OutMessage, Place, PlatformProfile, RateLimited

SMOKE = StreamingConfig(
    streams=(1, 3), tokens=(30, 50), scale=0.05, deadline=200.0, answers=6, streams_at_once=3
)


async def test_every_policy_lands_the_exact_text_and_genbot_is_never_refused() -> None:
    async with asyncio.timeout(30):
        cells, probe = await run_streaming(SMOKE)
    assert [(c.streams, c.policy) for c in cells] == [
        (n, name) for n in SMOKE.streams for name in POLICIES
    ]
    for cell in cells:
        assert cell.finished, cell
        assert cell.runs * cell.streams == SMOKE.answers == cell.exact, cell
        assert cell.stale_chars and cell.stale_seconds
        assert len(cell.first_visible) == len(cell.final_lag) == SMOKE.answers
        landed = len(cell.stale_chars) - len(cell.live_chars) - len(cell.tail_chars)
        assert sorted(cell.live_chars + cell.tail_chars + [0] * landed) == sorted(cell.stale_chars)
        assert cell.live_chars and len(cell.live_seconds) == len(cell.live_chars)
    for n in SMOKE.streams:
        spans = {len(c.stale_chars) for c in cells if c.streams == n}
        assert len(spans) == 1, f"every policy is sampled at the same moments: {spans}"
    by_name = {(c.streams, c.policy): c for c in cells}
    assert all(by_name[n, "genbot"].rate_limited == 0 for n in SMOKE.streams)
    assert by_name[3, "every-delta"].rate_limited > 0
    table = streaming_table(cells, SMOKE, probe).render()
    assert probe.lag and "Event-loop lag during the runs" in table
    assert table.count("| genbot ") == len(SMOKE.streams)
    assert split_table(cells).render().count("| genbot ") == len(SMOKE.streams)


async def test_the_fake_platform_refuses_the_sixth_write_in_a_window() -> None:
    profile = PlatformProfile(edits_per_window_per_channel=5, edit_window_seconds=60.0)
    platform = BenchPlatform(profile, latency=0.0)
    place = Place("bench", "w", "c")
    ref = await platform.send(place, OutMessage("a"))
    for text in ("ab", "abc", "abcd", "abcde"):
        await platform.edit(ref, OutMessage(text))
    try:
        await platform.edit(ref, OutMessage("abcdef"))
    except RateLimited as limited:
        assert 59 < limited.retry_after <= 60
    else:
        raise AssertionError("the sixth write was accepted")
    assert (platform.accepted, platform.rate_limited) == (5, 1)
    assert platform.messages[ref.message_id].text == "abcde"
    await platform.send(Place("bench", "w", "other"), OutMessage("x"))


async def test_feeds_deliver_the_whole_script_in_order() -> None:
    (script,) = make_scripts(1, seed=3, tokens=(20, 20), rate=(1000.0, 1000.0))
    feed = Feed(script, scale=0.01)
    player = asyncio.create_task(feed.play(time.monotonic()))
    received = [delta async for delta in feed.deltas()]
    await player
    assert "".join(d for d in received if isinstance(d, str)) == script.text == feed.received
    assert len(feed.arrivals) == len(script.tokens) == 20
    assert not script.text[-1].isspace()
    assert feed.waiting_since(len(script.text)) is None
    assert feed.waiting_since(0) == feed.arrivals[0]


async def test_a_feed_read_as_text_deltas_gives_what_was_delivered_then_the_end() -> None:
    (script,) = make_scripts(1, seed=3, tokens=(20, 20), rate=(1000.0, 1000.0))
    feed = Feed(script, scale=0.01)
    assert feed.read_nowait() == []
    await feed.play(time.monotonic())
    assert feed.ended.is_set()
    assert feed.read_nowait() == [*script.tokens, StreamEnd("stop")]
    await feed.wait()
    assert feed.read_nowait() == []


async def test_staleness_comes_from_the_write_history_and_is_zero_once_the_text_is_whole() -> None:
    script = Script("s0", start=0.0, tokens=("Hello", " big", " world"), gaps=(10.0, 0.5, 0.5))
    feed = Feed(
        script, received=script.text, arrivals=[10.0, 10.5, 11.0], ends=[5, 9, 15], done=True
    )
    platform = BenchPlatform(latency=0.0)
    ref = await platform.send(Place("bench", "w", "c"), OutMessage("x"))
    platform.by_stream = {"s0": [ref.message_id]}
    shown = platform.messages[ref.message_id]
    shown.text, shown.history = script.text, [(10.2, "Hello" + MARKER), (11.3, script.text)]
    run = PolicyRun(StreamingCell("p", 1), platform, [feed], started=0.0, ended=11.3)
    sample(run, horizons=[12.0], step=0.5, scale=1.0)
    assert run.cell.stale_chars == [5, 4, 10, 0, 0]
    assert run.cell.stale_seconds == [0.0, 0.0, 0.5, 0.0, 0.0]
    assert (run.cell.live_chars, run.cell.tail_chars) == ([5, 4], [10])


def test_shown_chars_ignores_the_marker_and_stops_at_a_difference() -> None:
    assert shown_chars("Hello wor" + MARKER, "Hello world") == 9
    assert shown_chars("Hello world", "Hello world") == 11
    assert shown_chars("", "Hello") == 0
    assert shown_chars("Help", "Hello") == 3


def test_the_command_line_refuses_an_unknown_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse(["streaming", "bogus"])
    assert exited.value.code == 2
    assert "unknown benchmark 'bogus'" in capsys.readouterr().err
    assert parse(["storage", "--quick"]).names == ["storage"]
