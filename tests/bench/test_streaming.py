"""Smoke run of the streaming benchmark, time-compressed: structure and correctness only."""

from __future__ import annotations

import asyncio
import time

import pytest

from bench.__main__ import parse
from bench.platform import BenchPlatform
from bench.policies import POLICIES
from bench.streaming import (
    StreamingConfig,
    run_streaming,
    shown_chars,
    split_table,
    streaming_table,
)
from bench.streams import Feed, make_scripts
from bot.events import OutMessage, Place, RateLimited, SurfaceLimits
from bot.render import MARKER

SMOKE = StreamingConfig(streams=(1, 3), tokens=(30, 50), scale=0.05, deadline=200.0)


async def test_every_policy_lands_the_exact_text_and_genbot_is_never_refused() -> None:
    async with asyncio.timeout(30):
        cells = await run_streaming(SMOKE)
    assert [(c.streams, c.policy) for c in cells] == [
        (n, name) for n in SMOKE.streams for name in POLICIES
    ]
    for cell in cells:
        assert cell.finished, cell
        assert cell.exact == cell.streams, cell
        assert cell.stale_chars and cell.stale_seconds
        assert len(cell.first_visible) == len(cell.final_lag) == cell.streams
        assert sorted(cell.live_chars + cell.tail_chars) == sorted(cell.stale_chars)
        assert cell.live_chars and len(cell.live_seconds) == len(cell.live_chars)
    by_name = {(c.streams, c.policy): c for c in cells}
    assert all(by_name[n, "genbot"].rate_limited == 0 for n in SMOKE.streams)
    assert by_name[3, "every-delta"].rate_limited > 0
    table = streaming_table(cells, SMOKE).render()
    assert table.count("| genbot ") == len(SMOKE.streams)
    assert split_table(cells).render().count("| genbot ") == len(SMOKE.streams)


async def test_the_fake_platform_refuses_the_sixth_write_in_a_window() -> None:
    limits = SurfaceLimits(edits_per_window_per_channel=5, edit_window_seconds=60.0)
    platform = BenchPlatform(limits, latency=0.0)
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
