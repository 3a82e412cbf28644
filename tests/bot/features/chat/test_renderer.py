"""The stream renderer against a rate-limiting surface on a virtual clock."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from prometheus_client import REGISTRY

from bot.features.chat.renderer import (
    EMPTY_NOTE,
    INTERRUPTED_NOTE,
    LENGTH_NOTE,
    MARKER,
    TYPING_EVERY_SECONDS,
    RenderResult,
    StreamEnd,
    StreamRenderer,
)
from bot.kernel import (
    Command,
    MessageRef,
    OutMessage,
    Place,
    PlatformProfile,
    SurfaceRegistry,
    User,
    metrics,
)
from bot.outbox import Outbox
from bot.outbox.pacing import SWEEP_EVERY_GRANTS, Pacer, PacingTimeout
from tests.bot.features.chat.rendering import render_stream
from tests.fakes.clock import FakeClock
from tests.fakes.deltas import PumpedDeltas
from tests.fakes.surface import RateLimitingSurface, Write

PLACE = Place("fake", "w1", "c1")
DISCORD = PlatformProfile(max_text=2000, edits_per_window_per_channel=5, edit_window_seconds=5.0)
SLACK = PlatformProfile(
    max_text=4000,
    edits_per_window_per_channel=1000,
    edit_window_seconds=1.0,
    edits_per_minute_per_workspace=50,
    min_seconds_between_edits_of_one_message=1.0,
)


@dataclass
class Producer:
    """A model answer arriving piece by piece on the virtual clock; ``text`` is what has been
    yielded so far."""

    fake: FakeClock
    pieces: list[str]
    every: float = 0.1
    end: StreamEnd | None = None
    fail_after: int | None = None
    first_delay: float | None = None
    text: str = ""
    closed: bool = False
    yielded_at: list[float] = field(default_factory=list)

    async def stream(self) -> AsyncIterator[str | StreamEnd]:
        try:
            for index, piece in enumerate(self.pieces):
                delay = self.first_delay if index == 0 and self.first_delay else self.every
                await self.fake.sleep(delay)
                if index == self.fail_after:
                    raise ConnectionError("the provider hung up")
                self.text += piece
                self.yielded_at.append(self.fake.now)
                yield piece
            if self.end is not None:
                yield self.end
        finally:
            self.closed = True

    @property
    def full(self) -> str:
        return "".join(self.pieces)


def words(count: int, tag: str = "w") -> list[str]:
    return [f"{tag}{index} " for index in range(count)]


def setup(
    profile: PlatformProfile = DISCORD,
    *,
    flaky_every: int | None = None,
    flaky_retry_after: float = 0.7,
) -> tuple[FakeClock, RateLimitingSurface, Pacer]:
    fake = FakeClock()
    surface = RateLimitingSurface(
        fake.monotonic, profile, flaky_every=flaky_every, flaky_retry_after=flaky_retry_after
    )
    return fake, surface, Pacer(fake.clock, margin=0.0)


def writes_of(surface: RateLimitingSurface, result: RenderResult) -> list[Write]:
    ids = {ref.message_id for ref in result.messages}
    return [w for w in surface.writes if w.message_id in ids]


def check_fresh(surface: RateLimitingSurface, producers: dict[str, Producer]) -> list[str]:
    """Record every write whose text is not the producer's newest text (one-message answers)."""
    stale: list[str] = []
    owner: dict[str, Producer] = {}

    def on_write(write: Write) -> None:
        producer = producers.get(write.text.split(" ", 1)[0].rstrip("0123456789"))
        if write.kind == "send":
            owner[write.message_id] = producer  # type: ignore[assignment]
        producer = owner.get(write.message_id)
        assert producer is not None
        live = producer.text.rstrip() + MARKER
        if write.text not in (live, producer.full.rstrip()):
            stale.append(f"{write.at}: {write.text[-30:]!r} vs {live[-30:]!r}")

    surface.on_write = on_write
    return stale


async def test_one_stream_edits_as_it_goes_and_lands_the_exact_text() -> None:
    fake, surface, pacer = setup()
    producer = Producer(fake, words(300), every=0.05)
    stale = check_fresh(surface, {"w": producer})
    origin = Command(user=User("u1"), place=PLACE, name="chat")
    result = await fake.run(render_stream(producer.stream(), surface, PLACE, pacer, origin=origin))
    final = producer.full.rstrip()
    assert result.landed and result.text == final and result.reply == producer.full
    assert surface.texts_in(PLACE) == [final]
    assert surface.rate_limited == 0 and result.rate_limited == 0
    assert stale == []
    writes = writes_of(surface, result)
    assert writes[0].kind == "send" and writes[0].at == producer.yielded_at[0]
    assert surface.messages[writes[0].message_id].origin is origin
    assert all(w.from_model for w in writes)
    assert result.edits >= 10, "the answer was shown while it streamed"
    assert all(w.text.endswith(MARKER) for w in writes[:-1])
    assert not writes[-1].text.endswith(MARKER)
    assert writes[-1].at - producer.yielded_at[-1] <= 1.0, "the final text landed promptly"
    gaps = [b.at - a.at for a, b in itertools.pairwise(writes)]
    assert max(gaps) <= 1.0 + 1e-9, "one stream may use the whole channel window"


@pytest.mark.parametrize("streams", [1, 5, 20])
async def test_concurrent_streams_in_one_channel_share_the_window_without_429s(
    streams: int,
) -> None:
    fake, surface, pacer = setup()
    tags = [f"s{index}x" for index in range(streams)]
    producers = {tag: Producer(fake, words(220, tag), every=0.3) for tag in tags}
    stale = check_fresh(surface, producers)

    async def everyone() -> list[RenderResult]:
        return await asyncio.gather(
            *(render_stream(p.stream(), surface, PLACE, pacer) for p in producers.values())
        )

    results = await fake.run(everyone())
    assert surface.rate_limited == 0
    assert stale == []
    for producer, result in zip(producers.values(), results, strict=True):
        assert result.landed and result.rate_limited == 0
        assert [surface.messages[r.message_id].text for r in result.messages] == [
            producer.full.rstrip()
        ]
    assert sum(r.sends + r.edits for r in results) == len(surface.writes)
    interim = [
        len([w for w in writes_of(surface, r) if w.kind == "edit" and w.text.endswith(MARKER)])
        for r in results
    ]
    streaming_seconds = 220 * 0.3
    expected_each = streaming_seconds / streams  # the channel allows one write per second
    if streams <= 5:
        assert min(interim) >= expected_each * 0.6, interim
    assert max(interim) - min(interim) <= 2, f"unfair shares: {interim}"
    for result, producer in zip(results, producers.values(), strict=True):
        times = [w.at for w in writes_of(surface, result) if w.at <= producer.yielded_at[-1]]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        fair_share = streams * DISCORD.edit_window_seconds / DISCORD.edits_per_window_per_channel
        queue_jump = DISCORD.edit_window_seconds  # a staler stream or first message goes first
        assert max(gaps, default=0) <= fair_share + queue_jump + 1e-6, "staleness is bounded"


async def test_long_answers_continue_in_new_messages_with_code_fences_intact() -> None:
    fake, surface, pacer = setup(PlatformProfile(max_text=300))
    code = "".join(f"    print('line {index}')  # explain\n" for index in range(60))
    answer = "Here is the script:\n\n```python\n" + code + "```\n\nThat is all. " + "bye " * 80
    pieces = [answer[i : i + 7] for i in range(0, len(answer), 7)]
    producer = Producer(fake, pieces, every=0.05)
    result = await fake.run(render_stream(producer.stream(), surface, PLACE, pacer))
    assert result.landed and surface.rate_limited == 0
    assert result.text == answer.rstrip()
    assert "".join(chunk.body for chunk in result.chunks) == result.text
    finals = [surface.messages[ref.message_id].text for ref in result.messages]
    assert len(finals) >= 6
    assert finals == [chunk.text for chunk in result.chunks]
    for text in finals:
        assert len(text) <= 300
        assert not text.endswith(MARKER)
        fences = [line for line in text.split("\n") if line.lstrip().startswith("```")]
        assert len(fences) % 2 == 0, text
    assert any(text.startswith("```python\n") for text in finals[1:])
    for write in surface.writes:
        fences = [line for line in write.text.split("\n") if line.lstrip().startswith("```")]
        assert len(fences) % 2 == 0, f"unbalanced live text: {write.text!r}"
    assert any(w.text.endswith(MARKER + "\n```") for w in surface.writes), "live code is closed"
    live_after_successor: list[str] = []
    for index, ref in enumerate(result.messages[:-1]):
        successor = result.messages[index + 1].message_id
        born = next(w.at for w in surface.writes if w.message_id == successor)
        live_after_successor += [
            w.text for w in surface.writes if w.message_id == ref.message_id and w.at > born
        ]
    assert live_after_successor == [], "only the last message is live"


async def test_a_reply_cut_by_max_tokens_is_marked() -> None:
    fake, surface, pacer = setup()
    producer = Producer(fake, words(20), end=StreamEnd("length"))
    result = await fake.run(render_stream(producer.stream(), surface, PLACE, pacer))
    assert result.finish_reason == "length"
    assert result.text == producer.full.rstrip() + "\n\n" + LENGTH_NOTE
    assert surface.texts_in(PLACE) == [result.text]


async def test_a_stream_that_stops_normally_gets_no_note() -> None:
    fake, surface, pacer = setup()
    producer = Producer(fake, words(20), end=StreamEnd("stop"))
    await fake.run(render_stream(producer.stream(), surface, PLACE, pacer))
    assert surface.texts_in(PLACE) == [producer.full.rstrip()]


async def test_an_interrupted_stream_is_marked_and_closed() -> None:
    fake, surface, pacer = setup()
    producer = Producer(fake, words(50), fail_after=30)
    result = await fake.run(render_stream(producer.stream(), surface, PLACE, pacer))
    assert result.interrupted and isinstance(result.error, ConnectionError)
    assert result.text == "".join(words(30)).rstrip() + "\n\n" + INTERRUPTED_NOTE
    assert surface.texts_in(PLACE) == [result.text]
    assert producer.closed


async def test_errors_that_are_not_interruptions_propagate_after_the_text_lands() -> None:
    fake, surface, pacer = setup()

    async def buggy() -> AsyncIterator[str]:
        yield "partial answer"
        await fake.sleep(1.0)
        raise ValueError("a bug in the adapter")

    outbox = Outbox(SurfaceRegistry([surface]), pacer)
    renderer = StreamRenderer(outbox, PLACE, interrupt_errors=(ConnectionError,))
    with pytest.raises(ValueError, match="a bug"):
        await fake.run(renderer.render(PumpedDeltas(buggy())))
    assert surface.texts_in(PLACE) == ["partial answer"]
    assert not renderer.result.interrupted


async def test_empty_and_broken_answers_still_say_something() -> None:
    fake, surface, pacer = setup()
    empty = await fake.run(
        render_stream(Producer(fake, ["", "  "]).stream(), surface, PLACE, pacer)
    )
    assert surface.messages[empty.messages[0].message_id].text == EMPTY_NOTE
    broken = Producer(fake, ["x"], fail_after=0)
    result = await fake.run(render_stream(broken.stream(), surface, PLACE, pacer))
    assert surface.messages[result.messages[0].message_id].text == INTERRUPTED_NOTE


async def test_typing_shows_until_the_first_text_which_is_posted_at_once() -> None:
    fake, surface, pacer = setup()
    producer = Producer(fake, words(5), first_delay=20.0)
    result = await fake.run(render_stream(producer.stream(), surface, PLACE, pacer))
    assert surface.typing_at == [0.0, TYPING_EVERY_SECONDS, 2 * TYPING_EVERY_SECONDS]
    assert writes_of(surface, result)[0].at == 20.0


async def test_a_placeholder_is_posted_before_the_first_text_and_replaced() -> None:
    fake, surface, pacer = setup()
    producer = Producer(fake, words(5), first_delay=3.0)
    result = await fake.run(
        render_stream(producer.stream(), surface, PLACE, pacer, placeholder="_thinking…_")
    )
    writes = writes_of(surface, result)
    assert (writes[0].at, writes[0].text) == (0.0, "_thinking…_")
    assert surface.typing_at == []
    assert surface.texts_in(PLACE) == [producer.full.rstrip()]


async def test_retry_after_is_honoured_and_the_final_text_still_lands() -> None:
    fake, surface, pacer = setup(flaky_every=3, flaky_retry_after=2.5)
    producer = Producer(fake, words(350), every=0.05)
    result = await fake.run(render_stream(producer.stream(), surface, PLACE, pacer))
    assert result.landed and surface.texts_in(PLACE) == [producer.full.rstrip()]
    assert result.rate_limited == surface.rate_limited > 3
    for refused_at, retry_after in surface.refusals:
        following = [w.at for w in surface.writes if w.at >= refused_at]
        assert following and following[0] >= refused_at + retry_after


async def test_slack_limits_per_message_and_per_workspace_are_respected() -> None:
    fake, surface, pacer = setup(SLACK)
    places = [Place("fake", "w1", f"c{index}") for index in range(3)]
    producers = [Producer(fake, words(450, f"p{index}x"), every=0.05) for index in range(3)]

    async def everyone() -> list[RenderResult]:
        return await asyncio.gather(
            *(
                render_stream(p.stream(), surface, place, pacer)
                for p, place in zip(producers, places, strict=True)
            )
        )

    results = await fake.run(everyone())
    assert surface.rate_limited == 0
    for producer, result, place in zip(producers, results, places, strict=True):
        assert result.landed and surface.texts_in(place) == [producer.full.rstrip()]
        times = [w.at for w in writes_of(surface, result)]
        assert all(b - a >= 1.0 for a, b in itertools.pairwise(times))
    stamps = [w.at for w in surface.writes]
    assert all(len([t for t in stamps if s <= t < s + 60]) <= 50 for s in stamps)


class EditRefusingSurface(RateLimitingSurface):
    """A platform that takes posts but refuses every edit ("retry after 1000 s")."""

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        self._refuse(1000.0)


async def test_the_final_wait_is_bounded_when_the_platform_keeps_refusing() -> None:
    fake = FakeClock()
    surface, pacer = EditRefusingSurface(fake.monotonic, DISCORD), Pacer(fake.clock, margin=0.0)
    producer = Producer(fake, words(10))

    result = await fake.run(
        render_stream(producer.stream(), surface, PLACE, pacer, final_timeout=30.0)
    )
    assert not result.landed
    assert result.text == producer.full.rstrip()
    assert fake.now < producer.yielded_at[-1] + 30.0 + 1.0


async def test_cancelling_a_render_closes_the_stream() -> None:
    fake, surface, pacer = setup()
    producer = Producer(fake, words(1000), every=0.1)

    async def cancel_soon() -> None:
        task = asyncio.ensure_future(render_stream(producer.stream(), surface, PLACE, pacer))
        await fake.sleep(5.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    await fake.run(cancel_soon())
    assert producer.closed
    assert len(producer.text) < len(producer.full)


async def test_the_pacer_serves_urgent_writes_first_and_honours_deadlines() -> None:
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)
    profile = PlatformProfile(edits_per_window_per_channel=1, edit_window_seconds=10.0)
    order: list[str] = []

    async def write(name: str, urgent: bool) -> None:
        await pacer.acquire(PLACE, profile, urgent=urgent)
        order.append(name)

    async def scenario() -> None:
        await write("first", False)
        await asyncio.gather(write("interim", False), write("final", True))
        with pytest.raises(PacingTimeout):
            await pacer.acquire(PLACE, profile, urgent=True, deadline=fake.now + 5.0)

    await fake.run(scenario())
    assert order == ["first", "final", "interim"]
    assert pacer.granted == 3


async def test_windows_of_idle_channels_are_forgotten() -> None:
    fake = FakeClock()
    pacer = Pacer(fake.clock, margin=0.0)

    async def one_write_per_channel() -> None:
        for index in range(SWEEP_EVERY_GRANTS):
            await pacer.acquire(Place("fake", "w", f"c{index}"), DISCORD, urgent=True)
            await fake.sleep(0.1)

    metrics.PACED_CHANNELS.set(-1)
    await fake.run(one_write_per_channel())
    remembered = REGISTRY.get_sample_value("genbot_paced_channels")
    assert remembered is not None and 0 <= remembered < 60


async def test_a_thread_shares_its_channel_window() -> None:
    fake, surface, pacer = setup()
    thread = PLACE.in_thread("t1")
    producers = [Producer(fake, words(100, "a")), Producer(fake, words(100, "b"))]

    async def both() -> tuple[RenderResult, RenderResult]:
        return await asyncio.gather(
            render_stream(producers[0].stream(), surface, PLACE, pacer),
            render_stream(producers[1].stream(), surface, thread, pacer),
        )

    await fake.run(both())
    assert surface.rate_limited == 0
    assert surface.texts_in(thread) == [producers[1].full.rstrip()]


@dataclass
class Arrivals:
    """A reply arriving on the virtual clock as a connection delivers it: kept until the
    renderer reads it (:class:`~bot.api.TextDeltas`); each read is recorded with the text
    shown at that moment."""

    fake: FakeClock
    surface: RateLimitingSurface
    pending: list[str | StreamEnd] = field(default_factory=list)
    given: str = ""
    reads: list[tuple[str, float, str]] = field(default_factory=list)
    """(``wait`` or ``read_nowait``, when, the text given so far) of every call."""
    delivered: list[tuple[float, str]] = field(default_factory=list)
    """(when, the whole text delivered by then) of every piece."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def deliver(self, script: list[tuple[float, str | StreamEnd]]) -> None:
        """Deliver each item after its pause; the end sets :attr:`ended`."""
        for pause, item in script:
            await self.fake.sleep(pause)
            self.pending.append(item)
            self.arrived.set()
            if isinstance(item, StreamEnd):
                self.ended.set()
            else:
                text = self.delivered[-1][1] if self.delivered else ""
                self.delivered.append((self.fake.now, text + item))

    def delivered_by(self, moment: float) -> str:
        return max((d for d in self.delivered if d[0] <= moment), default=(0.0, ""))[1]

    async def wait(self) -> None:
        self.reads.append(("wait", self.fake.now, self.given))
        while not self.pending and not self.ended.is_set():
            self.arrived.clear()
            await self.arrived.wait()

    def read_nowait(self) -> list[str | StreamEnd]:
        self.reads.append(("read_nowait", self.fake.now, self.given))
        return self._take()

    def _take(self) -> list[str | StreamEnd]:
        taken, self.pending = self.pending, []
        self.given += "".join(item for item in taken if isinstance(item, str))
        return taken

    def shown(self) -> str:
        texts = self.surface.texts_in(PLACE)
        return texts[-1].removesuffix(MARKER) if texts else ""


async def render_arrivals(
    script: list[tuple[float, str | StreamEnd]],
) -> tuple[RateLimitingSurface, Arrivals, RenderResult]:
    fake, surface, pacer = setup()
    arrivals = Arrivals(fake, surface)
    renderer = StreamRenderer(Outbox(SurfaceRegistry([surface]), pacer), PLACE)

    async def both() -> RenderResult:
        delivering = asyncio.create_task(arrivals.deliver(script))
        result = await renderer.render(arrivals)
        await delivering
        return result

    return surface, arrivals, await fake.run(both())


async def test_the_answer_is_read_only_while_nothing_waits_and_just_before_each_write() -> None:
    script: list[tuple[float, str | StreamEnd]] = [(0.07, piece) for piece in words(40)]
    surface, arrivals, result = await render_arrivals([*script, (0.07, StreamEnd("stop"))])
    assert result.landed and result.text == "".join(words(40)).rstrip()
    for kind, at, given in arrivals.reads:
        if kind == "wait":
            shown = [w.text.removesuffix(MARKER) for w in surface.writes if w.at <= at]
            assert (shown[-1] if shown else "") == given.rstrip(), f"waited at {at}, unshown"
    drains = {at for kind, at, _ in arrivals.reads if kind == "read_nowait"}
    *interim, final = writes_of(surface, result)
    assert [w.at for w in (*interim, final)] == sorted(drains), "a read without waiting first"
    for write in interim:
        delivered = arrivals.delivered_by(write.at).rstrip()
        assert write.text == delivered + MARKER, "a write shows all that arrived"
    assert final.text == result.text
    assert len(interim) <= 3, "one write a second (the window), not one per piece"


async def test_an_end_arriving_while_a_write_waits_lands_the_final_text_at_once() -> None:
    script: list[tuple[float, str | StreamEnd]] = [
        (0.0, "a "),
        (0.2, "b "),
        (0.1, StreamEnd("stop")),
    ]
    surface, arrivals, result = await render_arrivals(script)
    first, final = writes_of(surface, result)
    assert (first.at, first.text) == (0.0, "a" + MARKER)
    assert final.text == result.text == "a b"
    assert final.at == arrivals.delivered[-1][0] + 0.1, "not held to the pace (1 s) for the edit"


async def test_a_stalled_answer_does_not_hold_back_what_arrived_before() -> None:
    script: list[tuple[float, str | StreamEnd]] = [
        (0.0, "a "),
        (0.5, "b "),
        (30.0, StreamEnd("stop")),
    ]
    surface, arrivals, result = await render_arrivals(script)
    first, second, final = writes_of(surface, result)
    assert (first.at, second.at, second.text) == (0.0, 1.0, "a b" + MARKER)
    assert final.at == 30.5 and final.text == result.text == "a b"
    assert ("wait", 1.0, "a b ") in arrivals.reads, "it waited for more only once all was shown"
