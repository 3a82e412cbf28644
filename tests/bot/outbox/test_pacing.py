"""The pacer: held writes, stalest-first order, pacing — on a virtual clock; across processes,
on PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.features.chat.renderer import RenderResult
from bot.kernel import (
    OutMessage,
    Place,
    PlatformProfile,
    RateLimited,
    SurfaceRegistry,
    WriteKind,
)
from bot.outbox import Outbox, Post, WritePolicy, pacing
from bot.outbox.pacing import (
    FINAL_TEXT_BONUS,
    FIRST_MESSAGE_BONUS,
    FIRST_MESSAGE_HOLD,
    IN_FLIGHT_LIMIT,
    UNHELD_ALLOWANCE,
    Clock,
    Pacer,
    PacingTimeout,
)
from bot.outbox.windows import ChannelState, Demand, Grant, StreamDemand, Ticket
from storage import SqliteStore, WriteBooking, WriteWindow, WriteWindows
from storage.postgres import PostgresStore
from storage.queries import write_windows
from storage.queries.write_windows import SQL_GIVEN_BACK, UNRANKED, Rank
from tests.bot.features.chat.rendering import render_stream
from tests.fakes.clock import FakeClock
from tests.fakes.surface import RateLimitingSurface
from tests.postgres import PostgresCluster
from tests.storage.conftest import START, ManualClock
from tests.storage.counting import counted
from tests.storage.helpers import LONG_GATHER

PLACE = Place("fake", "w1", "c1")
DISCORD = PlatformProfile(max_text=2000, edits_per_window_per_channel=5, edit_window_seconds=5.0)
ONE_PER_SECOND = PlatformProfile(edits_per_window_per_channel=1, edit_window_seconds=1.0)
ADVERTISED = PlatformProfile(
    edits_per_window_per_channel=1, edit_window_seconds=1.0, enforces_windows=False
)
"""One write per second, advertised and not enforced (as the playground's window)."""


def slow_then_fast(
    slow_calls: int, going: float, back: float
) -> Callable[[int], tuple[float, float]]:
    """The first ``slow_calls`` requests are slow to arrive and to answer (a busy event loop or
    network), the rest are instant: the case where counting a write at its grant goes wrong."""

    def latency(call: int) -> tuple[float, float]:
        return (going, back) if call < slow_calls else (0.0, 0.0)

    return latency


async def pieces(fake: FakeClock, count: int, tag: str, every: float) -> AsyncIterator[str]:
    for index in range(count):
        await fake.sleep(every)
        yield f"{tag}{index} "


async def test_streams_are_not_refused_when_requests_arrive_late() -> None:
    fake = FakeClock()
    surface = RateLimitingSurface(
        fake.monotonic, DISCORD, latency=slow_then_fast(6, 0.8, 0.3), sleep=fake.sleep
    )
    pacer = Pacer(fake.clock)

    async def everyone() -> list[RenderResult]:
        return await asyncio.gather(
            *(
                render_stream(pieces(fake, 120, f"s{index}x", 0.1), surface, PLACE, pacer)
                for index in range(3)
            )
        )

    results = await fake.run(everyone())
    assert surface.rate_limited == 0, surface.refusals
    assert all(result.landed and result.rate_limited == 0 for result in results)
    stamps = [write.at for write in surface.writes]
    assert all(len([t for t in stamps if s <= t < s + 5.0]) <= 5 for s in stamps)


async def test_posts_are_not_refused_when_requests_arrive_late() -> None:
    fake = FakeClock()
    surface = RateLimitingSurface(
        fake.monotonic, DISCORD, latency=slow_then_fast(5, 1.0, 1.0), sleep=fake.sleep
    )
    outbox = Outbox(SurfaceRegistry([surface]), Pacer(fake.clock))

    posts = (
        outbox.write(PLACE, Post(OutMessage(f"note {i}")), WritePolicy.RAISE) for i in range(6)
    )
    await fake.run(asyncio.gather(*posts))
    assert surface.rate_limited == 0, surface.refusals
    assert len(surface.writes) == 6


async def test_a_held_write_counts_until_it_finishes_and_a_cancelled_one_gives_room_back() -> None:
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)
    granted: list[float] = []

    async def scenario() -> None:
        held = await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, hold=True)
        waiting = asyncio.ensure_future(pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True))
        waiting.add_done_callback(lambda _: granted.append(fake.now))
        await fake.sleep(3.0)
        assert not waiting.done(), "an unfinished write stays in the window"
        pacer.finish(held)
        pacer.finish(held)
        await waiting
        unused = await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, hold=True)
        pacer.give_back(unused)
        pacer.finish(unused)
        await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True)
        granted.append(fake.now)

    await fake.run(scenario())
    assert granted == [4.0, 4.0 + 1.0 + UNHELD_ALLOWANCE]


async def test_a_held_write_never_finished_leaves_the_window_eventually() -> None:
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)

    async def scenario() -> float:
        await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, hold=True)
        await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True)
        return fake.now

    assert await fake.run(scenario()) == IN_FLIGHT_LIMIT + 1.0


async def test_a_run_holds_its_room_until_the_call_returns_and_a_refusal_holds_the_channel() -> (
    None
):
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)
    calls: list[float] = []

    async def slow() -> str:
        calls.append(fake.now)
        await fake.sleep(2.0)
        return "made"

    async def refused() -> str:
        calls.append(fake.now)
        raise RateLimited(5.0)

    async def scenario() -> list[float]:
        far = fake.now + 60.0
        made = await pacer.run(PLACE, ONE_PER_SECOND, slow, "send", urgent=True, deadline=far)
        assert made == "made"
        with pytest.raises(RateLimited):
            await pacer.run(PLACE, ONE_PER_SECOND, refused, "send", urgent=True, deadline=far)
        await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True)
        return [*calls, fake.now]

    assert await fake.run(scenario()) == [0.0, 3.0, 8.0]


@pytest.mark.parametrize(
    ("profile", "expected"),
    [(ADVERTISED, [0.0, 1.0, 2.0]), (ONE_PER_SECOND, [0.0, 1.32, 2.64])],
)
async def test_a_write_counts_from_its_grant_only_where_the_platform_does_not_enforce_windows(
    profile: PlatformProfile, expected: list[float]
) -> None:
    """A platform that counts no write itself (the playground) has its window spent exactly: a
    write counts from its grant, however long its call takes. One that enforces its windows
    counts a write when its request arrives, so there it counts from the call's return and
    the margin."""
    fake = FakeClock()
    pacer = Pacer(fake.clock)
    calls: list[float] = []

    async def slow() -> None:
        calls.append(fake.now)
        await fake.sleep(0.3)

    async def scenario() -> list[float]:
        far = fake.now + 60.0
        for _ in range(3):
            await pacer.run(PLACE, profile, slow, "send", urgent=True, deadline=far)
        return calls

    assert await fake.run(scenario()) == pytest.approx(expected)


async def test_an_unmade_write_gives_its_room_back_where_windows_are_not_enforced() -> None:
    """A write counted from its grant is still open until it is made: one given back leaves no
    trace, one made and then given back by mistake still counts."""
    fake = FakeClock()
    pacer = Pacer(fake.clock)

    async def scenario() -> list[float]:
        unused = await pacer.acquire(PLACE, ADVERTISED, urgent=True, hold=True)
        pacer.give_back(unused)
        made = await pacer.acquire(PLACE, ADVERTISED, urgent=True, hold=True)
        granted = [fake.now]
        pacer.finish(made)
        pacer.give_back(made)
        await pacer.acquire(PLACE, ADVERTISED, urgent=True)
        return [*granted, fake.now]

    assert await fake.run(scenario()) == [0.0, 1.0]


FOUR_PER_SECOND = PlatformProfile(edits_per_window_per_channel=4, edit_window_seconds=1.0)


async def test_a_write_leaving_a_share_of_its_window_free_waits_while_fewer_are_free() -> None:
    """Paced writes that leave a quarter of a four-write window free take three of it; the
    fourth waits while fewer than one would be free, and an urgent write meanwhile finds room
    at once (without the spare, the fourth took it at 0.75 and the urgent one waited)."""
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)
    granted: dict[str, float] = {}

    async def write(name: str, *, urgent: bool, spare: float) -> None:
        await pacer.acquire(PLACE, FOUR_PER_SECOND, urgent=urgent, spare=spare)
        granted[name] = fake.now

    async def scenario() -> None:
        spared = [
            asyncio.ensure_future(write(f"spare{n}", urgent=False, spare=0.25)) for n in range(4)
        ]
        await fake.sleep(0.9)
        await write("urgent", urgent=True, spare=0.0)
        await asyncio.gather(*spared)

    await fake.run(scenario())
    spare3 = 0.25 + UNHELD_ALLOWANCE + 1.0
    assert granted == pytest.approx(
        {"spare0": 0.0, "spare1": 0.25, "spare2": 0.5, "urgent": 0.9, "spare3": spare3}
    )


async def test_a_write_leaving_a_share_of_its_workspace_window_free_waits_there_too() -> None:
    """Where a workspace has a window of its own (Slack's per method), paced writes leaving a
    quarter free take three of a four-write window, in any of its channels; an urgent write in
    another channel meanwhile finds room at once (without the spare, the fourth took it at 45 s
    and the urgent one waited)."""
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)
    profile = PlatformProfile(
        edits_per_window_per_channel=100, edit_window_seconds=1.0, edits_per_minute_per_workspace=4
    )
    granted: dict[str, float] = {}

    async def write(name: str, channel: str, *, urgent: bool, spare: float) -> None:
        place = Place("fake", "w1", channel)
        await pacer.acquire(place, profile, urgent=urgent, spare=spare)
        granted[name] = fake.now

    async def scenario() -> None:
        spared = [
            asyncio.ensure_future(write(f"spare{n}", f"c{n % 2}", urgent=False, spare=0.25))
            for n in range(4)
        ]
        await fake.sleep(50.0)
        await write("urgent", "c2", urgent=True, spare=0.0)
        await asyncio.gather(*spared)

    await fake.run(scenario())
    minute = pacing.WORKSPACE_WINDOW_SECONDS
    assert granted == pytest.approx(
        {
            "spare0": 0.0,
            "spare1": 15.0,
            "spare2": 30.0,
            "urgent": 50.0,
            "spare3": 15.0 + UNHELD_ALLOWANCE + minute,
        }
    )


async def test_a_run_without_room_in_time_makes_no_call_unless_late() -> None:
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)
    calls: list[float] = []

    async def call() -> None:
        calls.append(fake.now)

    async def scenario() -> None:
        await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, hold=True)
        soon = fake.now + 0.5
        with pytest.raises(PacingTimeout):
            await pacer.run(PLACE, ONE_PER_SECOND, call, "send", urgent=True, deadline=soon)
        await pacer.run(PLACE, ONE_PER_SECOND, call, "send", urgent=True, deadline=soon, late=True)

    await fake.run(scenario())
    assert len(calls) == 1 and calls[0] <= 0.5


async def test_waiting_stream_writes_are_served_stalest_first() -> None:
    fake = FakeClock(start=100.0)
    pacer = Pacer(fake.clock, margin=0.0)
    order: list[str] = []
    demands = {
        "few chars, waited 1 s": Demand(unseen=100, since=99.0),
        "many chars, waited 1 s": Demand(unseen=1600, since=99.0),
        "few chars, waited 2.5 s": Demand(unseen=10, since=97.5),
        "first message, waited 2.2 s": Demand(unseen=50, since=97.8, first=True),
        "finished, few chars, waited 1 s": Demand(unseen=100, since=99.0, final=True),
        "job progress edit": None,
    }

    async def write(name: str, last_served: float) -> None:
        demand = demands[name]
        await pacer.acquire(
            PLACE,
            ONE_PER_SECOND,
            urgent=False,
            last_served=last_served,
            demand=None if demand is None else StreamDemand(demand),
        )
        order.append(name)

    async def scenario() -> None:
        await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True)
        await asyncio.gather(*(write(name, -float(i)) for i, name in enumerate(demands)))

    await fake.run(scenario())
    assert 2.2 + 50 / 800 + FIRST_MESSAGE_BONUS > 2.5 + 10 / 800
    assert 1 + 2 * 100 / 800 + FINAL_TEXT_BONUS < 2.5 + 10 / 800
    assert order == [
        "many chars, waited 1 s",
        "first message, waited 2.2 s",
        "few chars, waited 2.5 s",
        "finished, few chars, waited 1 s",
        "few chars, waited 1 s",
        "job progress edit",
    ]


async def test_a_first_message_is_held_while_others_wait_and_posted_at_once_alone() -> None:
    fake = FakeClock(start=100.0)
    pacer = Pacer(fake.clock, margin=0.0)
    granted: dict[str, float] = {}
    demands = {
        "first message, text from 100.9": Demand(unseen=10, since=100.9, first=True),
        "live, text from 100.8": Demand(unseen=100, since=100.8),
    }

    async def write(name: str) -> None:
        demand = demands[name]
        await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=False, demand=StreamDemand(demand))
        granted[name] = fake.now

    async def scenario() -> None:
        await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True)
        await asyncio.gather(*(write(name) for name in demands))

    await fake.run(scenario())
    assert 0.1 + 10 / 800 + FIRST_MESSAGE_BONUS > 0.2 + 100 / 800, "it would go first unheld"
    window_free = 100.0 + UNHELD_ALLOWANCE + 1.0
    assert granted["live, text from 100.8"] == pytest.approx(window_free)
    assert granted["first message, text from 100.9"] == pytest.approx(
        window_free + UNHELD_ALLOWANCE + 1.0
    )

    fake.now = 200.0
    fresh = Demand(unseen=10, since=200.0, first=True)
    alone = await fake.run(
        pacer.acquire(PLACE, ONE_PER_SECOND, urgent=False, demand=StreamDemand(fresh))
    )
    assert alone.stamp.granted == 200.0 < 200.0 + FIRST_MESSAGE_HOLD


async def test_non_urgent_writes_are_paced_and_urgent_ones_are_not() -> None:
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)
    times: dict[str, list[float]] = {"stream": [], "urgent": []}

    async def write(kind: str) -> None:
        demand = Demand(unseen=10, since=fake.now)
        await pacer.acquire(PLACE, DISCORD, urgent=kind == "urgent", demand=StreamDemand(demand))
        times[kind].append(fake.now)

    await fake.run(asyncio.gather(*(write("stream") for _ in range(5))))
    await fake.run(asyncio.gather(*(write("urgent") for _ in range(5))))
    assert times["stream"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    full_until = [second + 5.0 + UNHELD_ALLOWANCE for second in times["stream"]]
    assert times["urgent"] == pytest.approx(full_until), "the window is full until then"
    fake.now = 100.0
    await fake.run(asyncio.gather(*(write("urgent") for _ in range(5))))
    assert times["urgent"][5:] == [100.0] * 5


async def test_the_deadline_still_bounds_a_wait_behind_a_held_write() -> None:
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)

    async def scenario() -> None:
        await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, hold=True)
        with pytest.raises(PacingTimeout):
            await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, deadline=fake.now + 0.5)

    await fake.run(scenario())


async def test_a_held_grant_holds_the_window_until_it_is_finished() -> None:
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)
    granted: list[float] = []

    async def scenario() -> None:
        grant = await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, hold=True)
        granted.append(grant.stamp.granted)
        await fake.sleep(2.5)
        pacer.finish(grant)
        await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True)
        granted.append(fake.now)

    await fake.run(scenario())
    assert granted == [0.0, 3.5]


async def test_first_messages_of_concurrent_streams_do_not_burst_the_window() -> None:
    fake = FakeClock()
    surface = RateLimitingSurface(fake.monotonic, DISCORD)
    pacer = Pacer(fake.clock, margin=0.0)

    async def everyone() -> list[RenderResult]:
        return await asyncio.gather(
            *(
                render_stream(pieces(fake, 60, f"s{index}x", 0.1), surface, PLACE, pacer)
                for index in range(5)
            )
        )

    results = await fake.run(everyone())
    assert surface.rate_limited == 0
    stamps = [write.at for write in surface.writes]
    assert all(b - a >= 1.0 - 1e-9 for a, b in itertools.pairwise(stamps)), stamps
    assert all(result.landed for result in results)


async def test_the_stream_with_the_most_unshown_text_is_updated_first() -> None:
    fake = FakeClock()
    surface = RateLimitingSurface(fake.monotonic, ONE_PER_SECOND)
    pacer = Pacer(fake.clock, margin=0.0)

    async def stream(first_at: float, last_at: float, last: str) -> AsyncIterator[str]:
        await fake.sleep(first_at)
        yield "start "
        await fake.sleep(last_at - first_at)
        yield last

    async def both() -> tuple[RenderResult, RenderResult]:
        return await asyncio.gather(
            render_stream(stream(0.1, 1.5, "x" * 1500 + " "), surface, PLACE, pacer),
            render_stream(stream(0.05, 1.2, "tiny "), surface, PLACE, pacer),
        )

    big, small = await fake.run(both())
    first_writes = [surface.writes[0].message_id, surface.writes[1].message_id]
    assert first_writes == [small.messages[0].message_id, big.messages[0].message_id]
    after_both_ended = next(write for write in surface.writes if write.at >= 1.5)
    assert after_both_ended.message_id == big.messages[0].message_id, "the older text went first"
    assert "x" * 1500 in after_both_ended.text


async def test_a_first_message_waiting_is_ranked_by_all_the_text_it_will_show() -> None:
    fake = FakeClock()
    surface = RateLimitingSurface(fake.monotonic, ONE_PER_SECOND)
    pacer = Pacer(fake.clock, margin=0.0)

    async def ending() -> AsyncIterator[str]:
        yield "start "
        await fake.sleep(0.5)
        yield "end"

    async def late() -> AsyncIterator[str]:
        await fake.sleep(0.55)
        yield "a "
        await fake.sleep(0.35)
        yield "y" * 1500 + " "
        await fake.sleep(2.0)
        yield "z"

    async def both() -> tuple[RenderResult, RenderResult]:
        return await asyncio.gather(
            render_stream(ending(), surface, PLACE, pacer),
            render_stream(late(), surface, PLACE, pacer),
        )

    _, first = await fake.run(both())
    second_write = surface.writes[1]
    assert second_write.message_id == first.messages[0].message_id, "the final text went first"
    assert second_write.at == 1.0 and "y" * 1500 in second_write.text


async def test_a_final_text_skips_the_pace_only_when_nobody_else_waits() -> None:
    fake = FakeClock()
    surface = RateLimitingSurface(fake.monotonic, DISCORD)
    pacer = Pacer(fake.clock, margin=0.0)

    async def short(tag: str, start: float) -> AsyncIterator[str]:
        await fake.sleep(start)
        yield f"{tag} hello"
        await fake.sleep(0.2)
        yield " world"

    alone = await fake.run(render_stream(short("a", 0.1), surface, PLACE, pacer))
    first, final = surface.writes
    assert first.at == pytest.approx(0.1), "a lone stream's first message is not held"
    assert final.message_id == alone.messages[0].message_id
    assert final.at == pytest.approx(0.3), "not a pace (1 s) after the first message"

    fake.now = 100.0
    other = Place("fake", "w1", "c2")
    together = await fake.run(
        asyncio.gather(
            render_stream(short("b", 0.1), surface, other, pacer),
            render_stream(pieces(fake, 40, "cx", 0.1), surface, other, pacer),
        )
    )
    b_writes = [w.at for w in surface.writes if w.message_id == together[0].messages[0].message_id]
    assert len(b_writes) == 2 and b_writes[1] - b_writes[0] >= 1.0, b_writes


async def test_a_kind_with_its_own_workspace_window_does_not_spend_the_shared_one() -> None:
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)
    profile = PlatformProfile(
        edits_per_window_per_channel=1000,
        edit_window_seconds=1.0,
        edits_per_minute_per_workspace=2,
        writes_per_minute_per_workspace={"stream_append": 3},
    )
    places = [Place("fake", "w1", f"c{index}") for index in range(8)]

    async def grant_times(kind: WriteKind | None) -> list[float]:
        times = []
        for place in places[:5]:
            grant = await pacer.acquire(place, profile, urgent=True, kind=kind)
            times.append(grant.stamp.granted)
        return times

    async def both() -> tuple[list[float], list[float]]:
        return await asyncio.gather(grant_times("stream_append"), grant_times("edit"))

    appends, edits = await fake.run(both())
    assert appends[:3] == [0.0, 0.0, 0.0] and appends[3] >= 60.0, "three appends a minute"
    assert edits[:2] == [0.0, 0.0] and edits[2] >= 60.0, "two other writes a minute"


async def test_streaming_writes_skip_the_channel_window_and_starts_are_not_paced() -> None:
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)
    profile = PlatformProfile(
        edits_per_window_per_channel=1,
        edit_window_seconds=10.0,
        writes_per_minute_per_workspace={"stream_start": 20, "stream_append": 6},
        channel_window_kinds=frozenset({"send", "edit"}),
    )
    place = Place("fake", "w1", "c1")

    async def grants(kind: WriteKind, count: int) -> list[float]:
        times = []
        for _ in range(count):
            grant = await pacer.acquire(place, profile, urgent=False, kind=kind)
            times.append(grant.stamp.granted)
        return times

    async def everything() -> tuple[list[float], list[float], list[float]]:
        sends = await grants("send", 2)
        return sends, await grants("stream_start", 3), await grants("stream_append", 3)

    sends, starts, appends = await fake.run(everything())
    assert sends[1] >= 10.0, "posts keep the channel's window"
    assert starts == [sends[1]] * 3, "starts neither wait for the channel nor are paced"
    assert appends[1] - appends[0] >= 10.0 - 1e-9, "appends are paced over their own window"


async def test_writes_of_no_kind_keep_the_channels_window_where_only_some_kinds_count() -> None:
    """The outbox's posts and edits (no kind) on a platform that counts only sends and edits
    per channel (Slack): the sixth in a 5-per-5 s channel waits for the window; counted in
    none, all six went at once (429s and retries)."""
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)
    profile = PlatformProfile(
        edits_per_window_per_channel=5,
        edit_window_seconds=5.0,
        writes_per_minute_per_workspace={"stream_append": 6},
        channel_window_kinds=frozenset({"send", "edit"}),
    )

    async def called_at() -> float:
        return fake.monotonic()

    async def posts() -> list[float]:
        async def post() -> float:
            return await pacer.run(PLACE, profile, called_at, "send", urgent=True, deadline=60.0)

        return sorted(await asyncio.gather(*(post() for _ in range(6))))

    called = await fake.run(posts())

    assert called[:5] == [0.0] * 5
    assert called[5] >= 5.0


async def test_a_write_asked_past_its_deadline_goes_only_if_it_fits_at_once() -> None:
    """The deadline bounds the wait: a write asked after it with room goes (a final text asked
    late is written rather than given up); without room it gives up at once."""
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)

    async def asked_late() -> tuple[float, bool]:
        await fake.sleep(1.0)
        grant = await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, deadline=0.5)
        try:
            await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, deadline=0.5)
        except PacingTimeout:
            return grant.stamp.granted, True
        return grant.stamp.granted, False

    granted, refused = await fake.run(asked_late())

    assert granted == 1.0
    assert refused


async def test_writes_waiting_without_a_stream_are_ranked_once_per_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeClock()
    pacer = Pacer(fake.clock)
    ranked = 0
    rank = pacing.rank

    def counted(ticket: Ticket, now: float) -> tuple[int, float, float]:
        nonlocal ranked
        ranked += 1
        return rank(ticket, now)

    monkeypatch.setattr(pacing, "rank", counted)
    writes = 100
    order: list[int] = []

    async def write(n: int) -> None:
        grant = await pacer.acquire(PLACE, DISCORD, urgent=n % 2 == 0, last_served=-n)
        order.append(n)
        pacer.finish(grant)

    await fake.run(asyncio.gather(*(write(n) for n in range(writes))))
    at_once = [0, 2, 4, 6, 8]
    assert order == at_once + list(range(98, 9, -2)) + list(range(99, 0, -2)), "urgent first"
    assert ranked <= writes * writes, "once per change of who waits (127,910 when re-ranked)"


async def test_processes_writing_into_one_channel_count_each_write_once(
    postgres: PostgresCluster,
) -> None:
    """Three processes' paced writes into one channel: each write is counted in the windows they
    share by one reservation (booked for its turn when another process's write went first), not
    asked for again after each wait."""
    url = postgres.create_schema()
    async with AsyncExitStack() as stack:
        stores = [
            await stack.enter_async_context(await PostgresStore.open(url, pool_size=2))
            for _ in range(3)
        ]
        trips = [counted(store).trips for store in stores]
        pacers = [Pacer(shared=store.write_windows) for store in stores]
        profile = PlatformProfile(edits_per_window_per_channel=20, edit_window_seconds=1.0)

        async def write(pacer: Pacer) -> None:
            pacer.finish(await pacer.acquire(PLACE, profile, urgent=False, hold=True))

        await asyncio.gather(*(write(pacer) for pacer in pacers for _ in range(4)))

        assert sum(map(len, trips)) <= 12, "reservations for 12 writes"


async def test_a_booked_write_made_too_late_for_its_booking_asks_again(
    postgres: PostgresCluster,
) -> None:
    """A write booked for its turn in the shared windows, woken later than its booking allows
    (a busy event loop), is counted again rather than made on a slot that no longer covers it."""
    url = postgres.create_schema()
    now = [0.0]
    late = [1.0]

    async def sleep(seconds: float) -> None:
        now[0] += seconds + late.pop() if late else seconds
        await asyncio.sleep(0)

    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        profile = PlatformProfile(edits_per_window_per_channel=20, edit_window_seconds=1.0)
        window = WriteWindow("fake/w1/c1", 20, 1.0 + pacing.DEFAULT_MARGIN)
        assert await other.write_windows.reserve_writes([window]) == 0.0
        trips = counted(ours).trips
        pacer = Pacer(Clock(monotonic=lambda: now[0], sleep=sleep), shared=ours.write_windows)

        pacer.finish(await pacer.acquire(PLACE, profile, urgent=False, hold=True))

        assert len(trips) == 2, "booked once, woken too late, booked again"


async def test_the_next_write_asks_for_its_shared_turn_before_its_room_opens(
    postgres: PostgresCluster,
) -> None:
    """A write waiting for room asks for its turn in the shared windows ``BOOK_AHEAD`` before
    its room here opens and goes as it opens: asked only then, it went a reservation later
    (8–25 ms under load, on every write of a full channel)."""
    url = postgres.create_schema()
    clock = ManualClock()
    slept: list[tuple[float, int]] = []
    async with await PostgresStore.open(url, clock=clock) as ours:
        trips = counted(ours).trips

        async def sleep(seconds: float) -> None:
            slept.append((clock(), len(trips)))
            clock.advance(seconds)
            await asyncio.sleep(0)

        pacer = Pacer(Clock(monotonic=clock, sleep=sleep), shared=ours.write_windows)
        grant = await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, hold=True)
        clock.advance(0.01)
        pacer.finish(grant)
        opens = clock() + 1.0 + pacing.DEFAULT_MARGIN

        second = await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, hold=True)

        assert second.stamp.granted == pytest.approx(opens)
        asked_before = [count for at, count in slept if at < opens]
        assert len(trips) == 2 and asked_before[-1] == 2, (slept, len(trips))


class AskedAt(WriteWindows):
    """The shared write windows of a store, noting the (virtual) time of every reservation;
    each takes ``taking`` seconds of ``clock`` (a database under load) and, as a database call
    does, lets other tasks run."""

    def __init__(self, windows: WriteWindows, clock: FakeClock, taking: float = 0.0) -> None:
        super().__init__(windows.db, windows.clock)
        self.asked: list[float] = []
        self._fake = clock
        self._taking = taking

    async def book_writes(
        self,
        windows: Sequence[WriteWindow],
        *,
        spacing: float = 0.0,
        within: float = 0.0,
        rank: Rank = UNRANKED,
        for_room: bool = True,
    ) -> WriteBooking:
        self.asked.append(self._fake.monotonic())
        await self._fake.sleep(self._taking)
        return await super().book_writes(
            windows, spacing=spacing, within=within, rank=rank, for_room=for_room
        )


class BookedLater(AskedAt):
    """:class:`AskedAt` whose windows book every write ``later`` seconds ahead."""

    def __init__(self, windows: WriteWindows, clock: FakeClock, later: float) -> None:
        super().__init__(windows, clock)
        self._later = later

    async def book_writes(
        self,
        windows: Sequence[WriteWindow],
        *,
        spacing: float = 0.0,
        within: float = 0.0,
        rank: Rank = UNRANKED,
        for_room: bool = True,
    ) -> WriteBooking:
        await super().book_writes(
            windows, spacing=spacing, within=within, rank=rank, for_room=for_room
        )
        return WriteBooking(self._later, True)


async def test_a_write_booked_past_its_deadline_gives_up_at_once(tmp_path: Path) -> None:
    """Counted for a moment after its deadline (the database's answer came late), a write gives
    its booking back and gives up then, not after sleeping until the booking."""
    fake = FakeClock()
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        pacer = Pacer(fake.clock, shared=BookedLater(store.write_windows, fake, later=2.0))

        async def write() -> float:
            try:
                await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, deadline=1.0)
            except PacingTimeout:
                return fake.monotonic()
            raise AssertionError("granted past its deadline")

        gave_up = await fake.run(write())

    assert gave_up < 1.0


async def test_a_booked_write_another_passed_gives_up_at_its_deadline(tmp_path: Path) -> None:
    """A progress edit booked 0.2 s ahead, passed by a result that arrived while it slept (the
    result is next here, booked until 0.3 s), gives its booking back and gives up at its
    deadline (0.25 s), not once the result went: past its deadline it waited for a change with
    the shortest timer, again and again, until its booking lapsed or it was next."""
    fake = FakeClock()
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        pacer = Pacer(fake.clock, shared=BookedLater(store.write_windows, fake, later=0.2))

        async def both() -> float:
            progress = asyncio.ensure_future(
                pacer.acquire(
                    PLACE, SHARED_PROFILE, urgent=False, hold=True, spare=0.25, deadline=0.25
                )
            )
            await fake.sleep(0.1)
            result = asyncio.ensure_future(
                pacer.acquire(PLACE, SHARED_PROFILE, urgent=True, hold=True)
            )
            with pytest.raises(PacingTimeout):
                await progress
            gave_up = fake.monotonic()
            pacer.finish(await result)
            return gave_up

        assert await fake.run(both()) == pytest.approx(0.25, abs=0.001)


ROOMY = PlatformProfile(edits_per_window_per_channel=1000, edit_window_seconds=1.0)
QUEUED = 20


@pytest.mark.parametrize("virtual", [True, False], ids=["virtual clock", "event loop's clock"])
async def test_writes_waiting_for_a_change_in_their_channel_start_no_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, virtual: bool
) -> None:
    """Twenty paced writes queued in one channel, each behind one asking for its turn in the
    shared windows: every grant wakes the writes still waiting (190 waits for a change in all),
    and a wait is one future, woken by the change or by the clock's timer. Each wait used to
    start two tasks (the change's ``Event.wait`` and the clock's sleep): 380."""
    fake = FakeClock()
    clock = fake.clock if virtual else Clock()
    waits = 0
    wait = Pacer._wait_for_change

    async def counted(pacer: Pacer, channel: ChannelState, until: float) -> None:
        nonlocal waits
        waits += 1
        await wait(pacer, channel, until)

    monkeypatch.setattr(Pacer, "_wait_for_change", counted)
    started: list[str] = []

    def noted(loop: asyncio.AbstractEventLoop, coro: Any) -> asyncio.Future[Any]:
        started.append(getattr(coro, "__qualname__", repr(coro)))
        return asyncio.Task(coro, loop=loop)

    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        pacer = Pacer(
            clock, shared=AskedAt(store.write_windows, fake, taking=0.01 if virtual else 0.0)
        )

        async def queued() -> list[Grant]:
            loop = asyncio.get_running_loop()
            writes = [pacer.acquire(PLACE, ROOMY, urgent=False) for _ in range(QUEUED)]
            tasks = [asyncio.ensure_future(write) for write in writes]
            loop.set_task_factory(noted)
            try:
                async with asyncio.timeout(30.0):
                    return await asyncio.gather(*tasks)
            finally:
                loop.set_task_factory(None)

        grants = await (fake.run(queued()) if virtual else queued())

    assert len(grants) == QUEUED
    if virtual:
        assert waits == QUEUED * (QUEUED - 1) // 2, "each write woken by every grant before it"
    else:
        assert waits >= QUEUED - 1, "those behind the first, at least once"
    assert started == []


async def test_a_write_cancelled_while_it_waits_for_a_change_leaves_nothing_behind(
    tmp_path: Path,
) -> None:
    """A write cancelled while it waits behind another's reservation ends at once and leaves no
    timer on the clock; the writes beside it are granted as before."""
    fake = FakeClock()
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        pacer = Pacer(fake.clock, shared=AskedAt(store.write_windows, fake, taking=1.0))

        async def cancelled_one() -> list[Grant]:
            writes = [
                asyncio.ensure_future(pacer.acquire(PLACE, ROOMY, urgent=False)) for _ in range(3)
            ]
            await asyncio.sleep(0)
            writes[1].cancel()
            with pytest.raises(asyncio.CancelledError):
                await writes[1]
            assert fake.monotonic() == 0.0
            return [await writes[0], await writes[2]]

        first, last = await fake.run(cancelled_one())

    assert fake.pending() == 0
    assert first.stamp.granted < last.stamp.granted


async def test_slow_reservations_are_used_rather_than_lapse_and_asked_again(
    tmp_path: Path,
) -> None:
    """Results waiting in a full channel while each reservation takes 0.3 s (a database under a
    burst's load) are each made on one reservation: their bookings, timed from before the
    reservation, had lapsed when it returned, were given back and asked for again."""
    fake = FakeClock()
    profile = PlatformProfile(edits_per_window_per_channel=2, edit_window_seconds=1.0)
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        shared = AskedAt(store.write_windows, fake, taking=0.3)
        pacer = Pacer(fake.clock, shared=shared)

        async def burst() -> None:
            first = [await pacer.acquire(PLACE, profile, urgent=True, hold=True) for _ in range(2)]
            for grant in first:
                pacer.finish(grant)

            async def write() -> None:
                pacer.finish(await pacer.acquire(PLACE, profile, urgent=True, hold=True))

            await asyncio.gather(*(write() for _ in range(4)))

        await fake.run(burst())

    assert len(shared.asked) == 6, shared.asked


async def test_urgent_writes_that_fit_together_ask_for_their_shared_turns_together(
    tmp_path: Path,
) -> None:
    """When a full channel's window opens for several waiting results at once, each asks for
    its turn in the shared windows then, together, and goes once counted: asked one after
    another, the last of four waited four reservations (1.2 s at 0.3 s each)."""
    fake = FakeClock()
    profile = PlatformProfile(edits_per_window_per_channel=4, edit_window_seconds=1.0)
    granted: list[tuple[int, float]] = []
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        shared = AskedAt(store.write_windows, fake, taking=0.3)
        pacer = Pacer(fake.clock, shared=shared)

        async def burst() -> float:
            first = await asyncio.gather(
                *(pacer.acquire(PLACE, profile, urgent=True, hold=True) for _ in range(4))
            )
            for grant in first:
                pacer.finish(grant)
            opens = fake.monotonic() + 1.0 + pacing.DEFAULT_MARGIN

            async def write(n: int) -> None:
                grant = await pacer.acquire(PLACE, profile, urgent=True, hold=True)
                granted.append((n, grant.stamp.granted))
                pacer.finish(grant)

            await asyncio.gather(*(write(n) for n in range(4)))
            return opens

        opens = await fake.run(burst())

    assert sorted(n for n, _ in granted) == [0, 1, 2, 3]
    assert max(at for _, at in granted) <= opens + 0.3, (opens, granted, shared.asked)
    assert len(shared.asked) == 8, "one reservation each"


class FullUntil(AskedAt):
    """:class:`AskedAt` whose windows other processes filled until ``until`` (virtual time):
    until then every reservation is told to wait for it, nothing counted."""

    def __init__(self, windows: WriteWindows, clock: FakeClock, until: float) -> None:
        super().__init__(windows, clock, taking=0.01)
        self._until = until

    async def book_writes(
        self,
        windows: Sequence[WriteWindow],
        *,
        spacing: float = 0.0,
        within: float = 0.0,
        rank: Rank = UNRANKED,
        for_room: bool = True,
    ) -> WriteBooking:
        booking = await super().book_writes(
            windows, spacing=spacing, within=within, rank=rank, for_room=for_room
        )
        left = self._until - self._fake.monotonic()
        return WriteBooking(left, False) if left > 0 else booking


async def test_writes_behind_others_wait_while_the_shared_windows_are_full(
    tmp_path: Path,
) -> None:
    """Urgent writes with room here while other processes filled their channel's shared window
    ask there together once, then wait for the time they were told: asking together again at
    once, each asked again every reservation (about fifty times each here)."""
    fake = FakeClock()
    profile = PlatformProfile(edits_per_window_per_channel=4, edit_window_seconds=1.0)
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        shared = FullUntil(store.write_windows, fake, until=0.5)
        pacer = Pacer(fake.clock, shared=shared)

        async def write() -> None:
            pacer.finish(await pacer.acquire(PLACE, profile, urgent=True, hold=True))

        await fake.run(asyncio.gather(*(write() for _ in range(4))))

    assert len(shared.asked) <= 12, shared.asked


class TurnedAwayTogether(AskedAt):
    """:class:`AskedAt` whose channel other processes keep writing into until ``until``
    (virtual time): until then writes asking together (not booked) are told to wait a
    moment, nothing counted, while a write booking its own turn gets it, after theirs."""

    def __init__(self, windows: WriteWindows, clock: FakeClock, until: float) -> None:
        super().__init__(windows, clock, taking=0.01)
        self._until = until
        self.together: list[float] = []

    async def book_writes(
        self,
        windows: Sequence[WriteWindow],
        *,
        spacing: float = 0.0,
        within: float = 0.0,
        rank: Rank = UNRANKED,
        for_room: bool = True,
    ) -> WriteBooking:
        booking = await super().book_writes(
            windows, spacing=spacing, within=within, rank=rank, for_room=for_room
        )
        if self._fake.monotonic() >= self._until:
            return booking
        if within > 0:
            return WriteBooking(0.1, True)
        self.together.append(self._fake.monotonic())
        return WriteBooking(0.05, False)


async def test_writes_turned_away_together_ask_one_at_a_time_for_a_window(
    tmp_path: Path,
) -> None:
    """Urgent writes with room here, turned away when they asked together because other
    processes keep writing into their channel, ask one at a time for a window after: asking
    together again whenever told, those waiting asked every 0.06 s until their turns (54 asks
    here; about five a result in three processes' burst, 1.6 with the window)."""
    fake = FakeClock()
    profile = PlatformProfile(edits_per_window_per_channel=20, edit_window_seconds=1.0)
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        shared = TurnedAwayTogether(store.write_windows, fake, until=10.0)
        pacer = Pacer(fake.clock, shared=shared)

        async def write() -> None:
            grant = await pacer.acquire(PLACE, profile, urgent=True, hold=True)
            await fake.sleep(0.1)
            pacer.finish(grant)

        await fake.run(asyncio.gather(*(write() for _ in range(8))))

    assert len(shared.together) == 7, "the seven behind the first asked together once"
    assert len(shared.asked) - len(shared.together) == 8, "one booking each"


async def test_a_write_behind_others_gives_up_when_told_to_wait_past_its_deadline(
    tmp_path: Path,
) -> None:
    """A write asking for its shared turn beside the one before it, told the window there is
    full until after its deadline, gives up at once (it used to wait and be made after it)."""
    fake = FakeClock()
    profile = PlatformProfile(edits_per_window_per_channel=4, edit_window_seconds=1.0)
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        pacer = Pacer(fake.clock, shared=FullUntil(store.write_windows, fake, until=5.0))

        async def write(deadline: float | None) -> float | None:
            try:
                grant = await pacer.acquire(
                    PLACE, profile, urgent=True, hold=True, deadline=deadline
                )
            except PacingTimeout:
                return None
            pacer.finish(grant)
            return grant.stamp.granted

        first, second = await fake.run(asyncio.gather(write(None), write(0.5)))

    assert first is not None and first >= 5.0
    assert second is None


async def test_a_write_queued_behind_a_slow_reservation_gives_up_at_its_deadline(
    tmp_path: Path,
) -> None:
    """A write with room here, waiting for the one before it in its channel while that one's
    reservation in the shared windows takes 1 s, gives up at its deadline (0.5 s): it used to
    be granted after it (at 2 s), once the first went and its own reservation returned. (Its
    workspace window keeps it from asking beside the first.)"""
    fake = FakeClock()
    profile = PlatformProfile(
        edits_per_window_per_channel=20, edit_window_seconds=1.0, edits_per_minute_per_workspace=100
    )
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        pacer = Pacer(fake.clock, shared=AskedAt(store.write_windows, fake, taking=1.0))

        async def behind() -> float:
            with pytest.raises(PacingTimeout):
                await pacer.acquire(PLACE, profile, urgent=True, hold=True, deadline=0.5)
            return fake.now

        first, gave_up = await fake.run(
            asyncio.gather(pacer.acquire(PLACE, profile, urgent=True, hold=True), behind())
        )

    assert first.stamp.granted == 1.0
    assert gave_up == pytest.approx(0.5, abs=1e-3)


async def test_a_write_asking_ahead_still_gives_up_at_its_deadline(
    postgres: PostgresCluster,
) -> None:
    """Asked for ahead of its room, a write the shared windows cannot take before its deadline
    gives up then, as one asked for when its room opens does (it used to sleep past the
    deadline and be counted after it)."""
    url = postgres.create_schema()
    clock = ManualClock()

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        await asyncio.sleep(0)

    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        pacer = Pacer(Clock(monotonic=clock, sleep=sleep), shared=ours.write_windows)
        grant = await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, hold=True)
        clock.advance(0.01)
        pacer.finish(grant)
        window = WriteWindow("/".join(Pacer.keys(PLACE)[0]), 1, 1.0 + pacing.DEFAULT_MARGIN)
        assert (await other.write_windows.book_writes([window], within=2.0)).counted
        deadline = clock() + 1.5

        with pytest.raises(PacingTimeout):
            await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, hold=True, deadline=deadline)

        assert clock() < deadline, "given up at once, not after sleeping past the deadline"


async def test_a_held_write_counts_in_the_shared_windows_until_its_call_returned(
    postgres: PostgresCluster,
) -> None:
    """The pacer tells the windows other processes share when a held write's call returned, so
    there too it counts a window (and the margin) from then, not from its grant with an
    allowance for the request."""
    url = postgres.create_schema()
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        profile = PlatformProfile(edits_per_window_per_channel=1, edit_window_seconds=1.0)
        pacer = Pacer(
            Clock(monotonic=clock, sleep=lambda _: asyncio.sleep(0)), shared=ours.write_windows
        )
        window = WriteWindow("/".join(Pacer.keys(PLACE)[0]), 1, 1.0 + pacing.DEFAULT_MARGIN)

        grant = await pacer.acquire(PLACE, profile, urgent=True, hold=True)
        clock.advance(0.05)
        pacer.finish(grant)
        pacer.finish(
            await pacer.acquire(Place("fake", "w1", "c2"), profile, urgent=True, hold=True)
        )

        assert await other.write_windows.reserve_writes([window]) == pytest.approx(window.seconds)


async def test_where_the_platform_does_not_enforce_windows_a_write_counts_there_from_its_grant(
    postgres: PostgresCluster,
) -> None:
    """In the windows other processes share as here: a write made 0.3 s after its grant counts
    for exactly its window from its grant (an enforcing platform's write would count the window
    and the margin from its return)."""
    url = postgres.create_schema()
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        pacer = Pacer(
            Clock(monotonic=clock, sleep=lambda _: asyncio.sleep(0)), shared=ours.write_windows
        )
        window = WriteWindow("/".join(Pacer.keys(PLACE)[0]), 1, 1.0, held=False)

        grant = await pacer.acquire(PLACE, ADVERTISED, urgent=True, hold=True)
        clock.advance(0.3)
        pacer.finish(grant)
        pacer.finish(
            await pacer.acquire(Place("fake", "w1", "c2"), ADVERTISED, urgent=True, hold=True)
        )

        assert await other.write_windows.reserve_writes([window]) == pytest.approx(0.7)


async def test_a_write_leaving_a_share_free_asks_the_shared_windows_for_less(
    postgres: PostgresCluster,
) -> None:
    """With 15 of a 20-write channel counted by another process, a progress edit (paced,
    leaving a quarter free, a short wait) is turned away and counts nowhere, where a write
    leaving none is counted at once."""
    url = postgres.create_schema()
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        profile = PlatformProfile(
            edits_per_window_per_channel=20, edit_window_seconds=1.0, enforces_windows=False
        )
        key = "/".join(Pacer.keys(PLACE)[0])
        window = WriteWindow(key, 20, 1.0, held=False)
        for _ in range(15):
            assert await other.write_windows.reserve_writes([window]) == 0.0
        clock.advance(0.2)
        pacer = Pacer(
            Clock(monotonic=clock, sleep=lambda _: asyncio.sleep(0)), shared=ours.write_windows
        )

        await pacer.acquire(PLACE, profile, urgent=True)
        with pytest.raises(PacingTimeout):
            await pacer.acquire(PLACE, profile, urgent=False, spare=0.25, deadline=clock() + 0.3)

        rows = await ours.db.fetch_all("SELECT key FROM write_slots WHERE key = ?", (key,))
        assert len(rows) == 16


async def test_a_write_leaving_a_share_free_is_not_booked_for_room_in_the_shared_windows(
    postgres: PostgresCluster,
) -> None:
    """A booked row counts from its reservation: a progress edit booked 3.5 s ahead would take
    the one free write of a Discord-like window at once, and a result asked meanwhile would wait
    for it. Told to wait, the progress edit is not counted, and the result goes at once."""
    url = postgres.create_schema()
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        key = "/".join(Pacer.keys(PLACE)[0])
        full = WriteWindow(key, 5, 5.0 + pacing.DEFAULT_MARGIN)
        for _ in range(4):
            assert await other.write_windows.reserve_writes([full]) == 0.0
        clock.advance(2.0)
        sleeps = Sleeps(clock)
        pacer = Pacer(sleeps.clock, shared=ours.write_windows)
        progress = asyncio.create_task(
            pacer.acquire(PLACE, DISCORD, urgent=False, spare=0.25, deadline=clock() + 4.0)
        )
        try:
            assert await sleeps.asleep() > 3.0, "told to wait for a write to stop counting"
            assert await other.write_windows.reserve_writes([full]) == 0.0, "the free write"
        finally:
            progress.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await progress


class Sleeps:
    """A pacer's sleeps on a virtual clock the test moves: each one waits for :meth:`wake`."""

    def __init__(self, clock: ManualClock) -> None:
        self.time = clock
        self._asleep: asyncio.Queue[tuple[float, asyncio.Event]] = asyncio.Queue()
        self.clock = Clock(monotonic=clock, sleep=self._sleep)

    async def _sleep(self, seconds: float) -> None:
        woken = asyncio.Event()
        await self._asleep.put((seconds, woken))
        await woken.wait()

    async def asleep(self) -> float:
        """Until the next sleep starts; how long it asked for (it waits for :meth:`wake`)."""
        async with asyncio.timeout(5.0):
            seconds, woken = await self._asleep.get()
        self._asleep.put_nowait((seconds, woken))
        return seconds

    async def wake(self, late: float = 0.0) -> None:
        """Move time by the next sleep's length (and ``late``) and end it."""
        async with asyncio.timeout(5.0):
            seconds, woken = await self._asleep.get()
        self.time.advance(seconds + late)
        woken.set()


SHARED_PROFILE = PlatformProfile(edits_per_window_per_channel=20, edit_window_seconds=1.0)
SHARED_KEY = "/".join(Pacer.keys(PLACE)[0])


def shared_window(capacity: int) -> WriteWindow:
    """The shared window of ``PLACE`` under ``SHARED_PROFILE``, asked with ``capacity``: a probe
    that fits only when fewer writes count there."""
    return WriteWindow(SHARED_KEY, capacity, 1.0 + pacing.DEFAULT_MARGIN)


@asynccontextmanager
async def after_anothers_write(
    postgres: PostgresCluster,
) -> AsyncIterator[tuple[PostgresStore, PostgresStore, Sleeps]]:
    """Two processes' stores on one database and our pacer's sleeps on a virtual clock, just
    after the other process wrote into ``PLACE``'s shared window: ours, the other's, the sleeps."""
    url = postgres.create_schema()
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        assert await other.write_windows.reserve_writes([shared_window(20)]) == 0.0
        yield ours, other, Sleeps(clock)


DISCORD_SHARED = WriteWindow(SHARED_KEY, 5, 5.0 + pacing.DEFAULT_MARGIN)
"""``PLACE``'s shared window under ``DISCORD``."""


@asynccontextmanager
async def after_anothers_four_writes(
    postgres: PostgresCluster,
) -> AsyncIterator[tuple[PostgresStore, PostgresStore, ManualClock]]:
    """Two processes' stores on one database, just after the other process wrote four times
    into ``PLACE``'s shared window under ``DISCORD`` (one write free there): ours, the
    other's, the clock."""
    url = postgres.create_schema()
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        for _ in range(4):
            assert await other.write_windows.reserve_writes([DISCORD_SHARED]) == 0.0
        yield ours, other, clock


async def test_a_write_cancelled_after_its_booking_gives_its_shared_turn_back_at_once(
    postgres: PostgresCluster,
) -> None:
    """A paced write booked a second ahead, for its turn after another process's four writes
    into a Discord-like channel, then cancelled before it (its stream stopped, its deadline),
    stops counting in the shared windows though this process asks for nothing more: the other
    process's next write fits at once. Its give-back used to wait for this process's next
    reservation: the other process's write then waited 5.42 s, until its own first write
    stopped counting, where the booking itself held the room 1 s."""
    async with after_anothers_four_writes(postgres) as (ours, other, clock):
        sleeps = Sleeps(clock)
        pacer = Pacer(sleeps.clock, shared=ours.write_windows)
        write = asyncio.create_task(pacer.acquire(PLACE, DISCORD, urgent=False, hold=True))
        assert await sleeps.asleep() == pytest.approx(1.0), "booked, spaced after the other's"
        counting = counted(ours)
        write.cancel()
        with pytest.raises(asyncio.CancelledError):
            await write
        clock.advance(0.1)
        async with asyncio.timeout(5):
            await counting.committed.wait()

        assert await other.write_windows.reserve_writes([DISCORD_SHARED]) == 0.0
        assert len(counting.trips) == 1, "one transaction: the give-back"


async def test_a_result_asked_with_a_stream_edit_takes_the_one_free_shared_write_first(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream's edit and a result asked for their shared turns together (one transaction),
    with one write free there, in that order: the result, which goes first here, is counted at
    once and the edit booked after it. Judged in the order asked, the edit took the free write
    (to be made only after the result, here) and the result was booked 3.52 s ahead, until
    another process's write stopped counting."""
    monkeypatch.setattr(write_windows, "GATHER", LONG_GATHER)
    async with after_anothers_four_writes(postgres) as (ours, _, clock):
        clock.advance(2.0)
        trips = counted(ours).trips
        sleeps = Sleeps(clock)
        pacer = Pacer(sleeps.clock, shared=ours.write_windows)
        demand = StreamDemand(Demand(unseen=40, since=clock()))
        edit = asyncio.create_task(
            pacer.acquire(PLACE, DISCORD, urgent=False, demand=demand, hold=True)
        )
        await asyncio.sleep(0)
        result = asyncio.create_task(pacer.acquire(PLACE, DISCORD, urgent=True, hold=True))
        try:
            done, _ = await asyncio.wait([result], timeout=5)
            assert result in done, "the result was booked ahead, after the edit"
            assert result.result().stamp.granted == clock()
            assert await sleeps.asleep() == pytest.approx(3.52), "the edit booked after it"
            assert len(trips) == 1, "asked together"
        finally:
            for task in (edit, result):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task


async def test_a_booking_that_lapsed_is_given_back_when_the_write_asks_again(
    postgres: PostgresCluster,
) -> None:
    """A write woken too late for its booking asks again; the booking it did not use is given
    back in that same reservation, so the write counts once there, not twice."""
    async with after_anothers_write(postgres) as (ours, other, sleeps):
        trips = counted(ours).trips
        pacer = Pacer(sleeps.clock, shared=ours.write_windows)
        write = asyncio.create_task(pacer.acquire(PLACE, SHARED_PROFILE, urgent=False, hold=True))
        await sleeps.wake(late=1.0)
        pacer.finish(await write)

        assert len(trips) == 2, "booked once, woken too late, booked again"
        assert await other.write_windows.reserve_writes([shared_window(3)]) == 0.0


async def test_a_write_leaving_a_share_free_is_booked_for_its_spacing_in_the_shared_windows(
    postgres: PostgresCluster,
) -> None:
    """A progress edit (it leaves a share of its windows free) asking just after another
    process's write, while the shared window has room, is booked for its turn a spacing later
    and made then: one reservation. Never booked, it was turned away for its spacing and asked
    again at the moment told, as did every other process's edit told the same moment (three
    processes' progress edits: 2.3 reservations an edit)."""
    async with after_anothers_write(postgres) as (ours, _, sleeps):
        trips = counted(ours).trips
        pacer = Pacer(sleeps.clock, shared=ours.write_windows)
        write = asyncio.create_task(
            pacer.acquire(PLACE, SHARED_PROFILE, urgent=False, hold=True, spare=0.25)
        )
        assert await sleeps.asleep() == pytest.approx(0.05), "spaced after the other's write"
        await sleeps.wake()
        pacer.finish(await write)

        assert len(trips) == 1, "booked for its turn: one reservation"


class StalledAfterBooking(WriteWindows):
    """The shared write windows of a store that book every write ``SHORT`` seconds before the
    latest moment it may go (its ``within``; on the real clock), then stall the event loop
    until just past that moment: the write's wake-up for its booking and its deadline fall due
    in one turn of the loop, as on a loaded machine."""

    SHORT = 0.05

    def __init__(self, windows: WriteWindows) -> None:
        super().__init__(windows.db, windows.clock)

    async def book_writes(
        self,
        windows: Sequence[WriteWindow],
        *,
        spacing: float = 0.0,
        within: float = 0.0,
        rank: Rank = UNRANKED,
        for_room: bool = True,
    ) -> WriteBooking:
        asked = time.monotonic()
        booking = await super().book_writes(
            windows, spacing=spacing, within=within, rank=rank, for_room=for_room
        )
        latest = asked + within
        asyncio.get_running_loop().call_soon(_stall_until, latest + 0.01)
        wait = latest - self.SHORT - time.monotonic()
        return WriteBooking(max(wait, 0.0), booking.counted, booking.slot)


def _stall_until(moment: float) -> None:
    """Hold the event loop (nothing else runs) until ``moment`` on the real monotonic clock."""
    while time.monotonic() < moment:
        pass


async def test_a_write_woken_late_on_its_booking_is_made_past_its_deadline(
    postgres: PostgresCluster,
) -> None:
    """A progress edit booked for its spacing 50 ms before its deadline, whose wake-up comes
    only past the deadline (the event loop held until then), is made on its booking, as
    :meth:`Pacer.acquire` promises a write it grants on a booking it holds: the bound on its
    wait runs ``BOOKED_GRACE`` past the deadline. Bounded at the deadline itself, it was
    cancelled in the turn that woke it, its booking given back and the edit skipped."""
    async with after_anothers_write(postgres) as (ours, _, _):
        pacer = Pacer(shared=StalledAfterBooking(ours.write_windows))
        made: list[str] = []

        async def edit() -> None:
            made.append("edit")

        deadline = time.monotonic() + 0.3
        await pacer.run(
            PLACE, SHARED_PROFILE, edit, "edit", urgent=False, deadline=deadline, spare=0.25
        )

        assert made == ["edit"]


async def test_a_booking_its_penalised_channel_cannot_use_is_given_back_at_once(
    postgres: PostgresCluster,
) -> None:
    """A write booked for its turn whose channel is then held for a retry-after longer than its
    booking gives the booking back when it wakes for it, not when the hold ends: told at once,
    in a transaction of its own, as the write waits out the hold."""
    async with after_anothers_write(postgres) as (ours, other, sleeps):
        pacer = Pacer(sleeps.clock, shared=ours.write_windows)
        write = asyncio.create_task(pacer.acquire(PLACE, SHARED_PROFILE, urgent=False, hold=True))
        await sleeps.asleep()
        counting = counted(ours)
        pacer.penalize(PLACE, SHARED_PROFILE, retry_after=2.0)
        await sleeps.wake()
        assert await sleeps.asleep() > 1.0, "held for the retry-after"
        async with asyncio.timeout(5):
            await counting.committed.wait()

        assert await other.write_windows.reserve_writes([shared_window(2)]) == 0.0
        write.cancel()
        with pytest.raises(asyncio.CancelledError):
            await write


async def test_a_held_write_given_back_stops_counting_in_the_shared_windows(
    postgres: PostgresCluster,
) -> None:
    """A held write granted and then not made (the renderer had nothing to write, its wait was
    cut short) is given back in the shared windows too, at once, though this process asks for
    nothing more: it used to count there as finished, a whole window from then."""
    url = postgres.create_schema()
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        pacer = Pacer(
            Clock(monotonic=clock, sleep=lambda _: asyncio.sleep(0)), shared=ours.write_windows
        )
        grant = await pacer.acquire(PLACE, SHARED_PROFILE, urgent=True, hold=True)
        counting = counted(ours)
        pacer.give_back(grant)
        async with asyncio.timeout(5):
            await counting.committed.wait()

        assert [sql for sql, _ in counting.trips[0].statements] == [SQL_GIVEN_BACK]
        assert await other.write_windows.reserve_writes([shared_window(1)]) == 0.0


class OnTheDatabase(WriteWindows):
    """The shared write windows of a store on a real database, asked on a virtual clock that
    stands still while the database answers (:meth:`FakeClock.held`); notes how many asks were
    made together (not booked: ``within`` 0)."""

    def __init__(self, windows: WriteWindows, clock: FakeClock) -> None:
        super().__init__(windows.db, windows.clock)
        self.together = 0
        self._fake = clock

    async def book_writes(
        self,
        windows: Sequence[WriteWindow],
        *,
        spacing: float = 0.0,
        within: float = 0.0,
        rank: Rank = UNRANKED,
        for_room: bool = True,
    ) -> WriteBooking:
        self.together += within == 0.0
        with self._fake.held():
            return await super().book_writes(
                windows, spacing=spacing, within=within, rank=rank, for_room=for_room
            )


SLACK_LIKE = PlatformProfile(
    edits_per_window_per_channel=5,
    edit_window_seconds=5.0,
    writes_per_minute_per_workspace={"stream_start": 20, "stream_append": 100, "stream_stop": 20},
    channel_window_kinds=frozenset({"send", "edit"}),
)


async def test_streaming_writes_skip_the_shared_channel_window_and_starts_are_not_spaced(
    postgres: PostgresCluster,
) -> None:
    """In the windows other processes share too, a natively streamed message's writes count
    only in their own workspace windows: beside a channel its posts filled, starts go at once
    and appends at their window's pace (0.6 s), counted there in it. They used to be counted
    in the channel's window there, waiting for it to empty, and spaced a second apart as its
    writes are."""
    url = postgres.create_schema()
    fake = FakeClock(start=START)
    async with (
        await PostgresStore.open(url, clock=fake.monotonic) as store,
        await PostgresStore.open(url, clock=fake.monotonic) as other,
    ):
        pacer = Pacer(fake.clock, shared=OnTheDatabase(store.write_windows, fake))

        async def grants(kind: WriteKind, count: int) -> list[float]:
            times = []
            for _ in range(count):
                urgent = kind == "send"
                grant = await pacer.acquire(PLACE, SLACK_LIKE, urgent=urgent, hold=True, kind=kind)
                pacer.finish(grant)
                times.append(grant.stamp.granted - START)
            return times

        async def everything() -> tuple[list[float], list[float], list[float]]:
            sends = await grants("send", 5)
            return sends, await grants("stream_start", 3), await grants("stream_append", 3)

        sends, starts, appends = await fake.run(everything())
        appends_window = WriteWindow("fake/w1/*stream_append", 3, 60.0 + pacing.DEFAULT_MARGIN)
        channel_window = WriteWindow("fake/w1/c1", 6, 5.0 + pacing.DEFAULT_MARGIN)
        appends_counted = await other.write_windows.reserve_writes([appends_window]) > 0
        channel_room = await other.write_windows.reserve_writes([channel_window]) == 0

    assert sends == [0.0] * 5, "the channel's window is full"
    assert starts == [0.0] * 3
    assert appends == pytest.approx([0.0, 0.6, 1.2])
    assert appends_counted, "the three appends count in their workspace window there"
    assert channel_room, "only the five posts count in the channel's window there"


async def test_writes_the_database_turned_away_together_ask_one_at_a_time_for_a_window(
    postgres: PostgresCluster,
) -> None:
    """Eight urgent writes with room here, in a channel whose shared window another process
    filled: the seven behind the first, turned away when they asked together, ask one at a
    time for a window after the time the database said it had room again (and the first
    counts then). Without that window they asked together again then (14 asks together)."""
    url = postgres.create_schema()
    fake = FakeClock(start=START)
    async with (
        await PostgresStore.open(url, clock=fake.monotonic) as ours,
        await PostgresStore.open(url, clock=fake.monotonic) as other,
    ):
        for _ in range(20):
            assert (await other.write_windows.book_writes([shared_window(20)])).counted
        shared = OnTheDatabase(ours.write_windows, fake)
        pacer = Pacer(fake.clock, shared=shared)

        async def write() -> float:
            grant = await pacer.acquire(PLACE, SHARED_PROFILE, urgent=True, hold=True)
            pacer.finish(grant)
            return grant.stamp.granted - START

        granted = await fake.run(asyncio.gather(*(write() for _ in range(8))))

    assert shared.together == 7, "the seven behind the first asked together once"
    stop = 1.0 + pacing.DEFAULT_MARGIN + write_windows.ALLOWANCE
    assert min(granted) == pytest.approx(stop), "when the other's writes stop counting"
