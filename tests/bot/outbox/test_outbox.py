"""The one write path: what each :class:`WritePolicy` does when the pacer has no room or the
platform refuses — on a virtual clock — and which platform call each operation makes."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import TypeVar

import pytest
from prometheus_client import REGISTRY

from bot.kernel import (
    ActivityKind,
    Attachment,
    Command,
    CommandNames,
    Event,
    FindsKeyedPosts,
    MessageRef,
    OutMessage,
    Place,
    PlatformProfile,
    RateLimited,
    SurfaceError,
    SurfaceRegistry,
    User,
)
from bot.outbox import (
    Activity,
    Delete,
    Demand,
    Edit,
    Notice,
    Operation,
    Outbox,
    Pacer,
    Post,
    Private,
    Stream,
    StreamDemand,
    Typing,
    WritePolicy,
    WriteRateLimited,
    WriteSkipped,
)
from bot.outbox.policy import ATTEMPTS, PROGRESS_SPARE, SKIP_WAIT, URGENT_WAIT
from tests.fakes.clock import FakeClock
from tests.fakes.surface import RateLimitingSurface

T = TypeVar("T")
PLACE = Place("fake", "w1", "c1")
ONE_PER_SECOND = PlatformProfile(edits_per_window_per_channel=1, edit_window_seconds=1.0)
HELLO = Post(OutMessage("hello"))


class RefusingSurface(RateLimitingSurface):
    """A surface whose platform refuses the first ``refusals`` posts ("retry after
    ``retry_after``"), recording when each post arrived."""

    def __init__(self, fake: FakeClock, refusals: int = 0, retry_after: float = 0.5) -> None:
        super().__init__(fake.monotonic, ONE_PER_SECOND)
        self.fake = fake
        self.refusals_left = refusals
        self.retry_after = retry_after
        self.calls: list[float] = []

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        self.calls.append(self.fake.now)
        if self.refusals_left > 0:
            self.refusals_left -= 1
            raise RateLimited(self.retry_after)
        return await super().send(place, message, origin=origin)


def _outbox(fake: FakeClock, surface: RateLimitingSurface) -> Outbox:
    return Outbox(SurfaceRegistry([surface]), Pacer(fake.clock, margin=0.0))


async def _busy_for(fake: FakeClock, pacer: Pacer, seconds: float) -> asyncio.Task[None]:
    """Hold the channel's only write until ``seconds`` from now."""
    grant = await pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True, hold=True)

    async def finish_later() -> None:
        await fake.sleep(seconds)
        pacer.finish(grant)

    return asyncio.ensure_future(finish_later())


@pytest.mark.parametrize("policy", [WritePolicy.MUST_DELIVER, WritePolicy.RAISE])
async def test_a_write_that_must_land_waits_for_room(policy: WritePolicy) -> None:
    fake = FakeClock()
    surface = RefusingSurface(fake)
    outbox = _outbox(fake, surface)

    async def scenario() -> MessageRef:
        busy = await _busy_for(fake, outbox.pacer, 5.0)
        written = await outbox.write(PLACE, HELLO, policy)
        await busy
        return written

    ref = await fake.run(scenario())
    assert surface.messages[ref.message_id].text == "hello"
    assert surface.calls == [6.0]


@pytest.mark.parametrize("policy", [WritePolicy.MUST_DELIVER, WritePolicy.RAISE])
async def test_a_write_that_must_land_goes_out_anyway_when_no_room_comes_in_time(
    policy: WritePolicy,
) -> None:
    fake = FakeClock()
    surface = RefusingSurface(fake)
    outbox = _outbox(fake, surface)

    async def scenario() -> MessageRef:
        busy = await _busy_for(fake, outbox.pacer, URGENT_WAIT * 2)
        written = await outbox.write(PLACE, HELLO, policy)
        busy.cancel()
        return written

    await fake.run(scenario())
    assert len(surface.calls) == 1 and surface.calls[0] <= URGENT_WAIT


async def test_a_progress_write_is_skipped_when_the_channel_is_busy() -> None:
    fake = FakeClock()
    surface = RefusingSurface(fake)
    outbox = _outbox(fake, surface)

    async def scenario() -> None:
        busy = await _busy_for(fake, outbox.pacer, 5.0)
        try:
            await outbox.write(PLACE, HELLO, WritePolicy.SKIP_IF_BUSY)
        finally:
            busy.cancel()

    with pytest.raises(WriteSkipped):
        await fake.run(scenario())
    assert surface.calls == [] and fake.now <= SKIP_WAIT


async def test_progress_writes_leave_a_share_of_the_window_to_results() -> None:
    """Progress edits leave ``PROGRESS_SPARE`` of each window free: with three of a channel's
    four writes counted, a progress edit is skipped at once and a result still goes at once."""
    fake = FakeClock()
    four_per_second = PlatformProfile(edits_per_window_per_channel=4, edit_window_seconds=1.0)
    surface = RateLimitingSurface(fake.monotonic, four_per_second)
    outbox = Outbox(SurfaceRegistry([surface]), Pacer(fake.clock, margin=0.0))

    async def scenario() -> None:
        for _ in range(3):
            await outbox.write(PLACE, HELLO, WritePolicy.MUST_DELIVER)
        with pytest.raises(WriteSkipped):
            await outbox.write(PLACE, HELLO, WritePolicy.SKIP_IF_BUSY)
        await outbox.write(PLACE, HELLO, WritePolicy.MUST_DELIVER)

    await fake.run(scenario())
    assert math.floor(4 * PROGRESS_SPARE) == 1, "the window of four leaves one write free"
    assert [write.at for write in surface.writes] == [0.0] * 4


async def test_a_progress_write_refused_by_the_platform_is_skipped_and_holds_the_channel() -> None:
    fake = FakeClock()
    surface = RefusingSurface(fake, refusals=100, retry_after=4.0)
    outbox = _outbox(fake, surface)

    async def scenario() -> float:
        with pytest.raises(WriteSkipped):
            await outbox.write(PLACE, HELLO, WritePolicy.SKIP_IF_BUSY)
        await outbox.pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True)
        return fake.now

    assert await fake.run(scenario()) >= 4.0
    assert surface.calls == [0.0]


@pytest.mark.parametrize("policy", [WritePolicy.MUST_DELIVER, WritePolicy.RAISE])
async def test_a_refused_write_is_retried_after_the_retry_after(policy: WritePolicy) -> None:
    fake = FakeClock()
    surface = RefusingSurface(fake, refusals=1, retry_after=2.0)
    outbox = _outbox(fake, surface)

    await fake.run(outbox.write(PLACE, HELLO, policy))
    assert len(surface.calls) == 2 and surface.calls[1] >= 2.0
    assert [write.text for write in surface.writes] == ["hello"]


async def test_a_chat_write_the_platform_keeps_refusing_tells_the_user() -> None:
    fake = FakeClock()
    surface = RefusingSurface(fake, refusals=100)
    outbox = _outbox(fake, surface)

    with pytest.raises(WriteRateLimited):
        await fake.run(outbox.write(PLACE, HELLO, WritePolicy.RAISE))
    assert len(surface.calls) == ATTEMPTS


async def test_a_job_write_the_platform_keeps_refusing_goes_out_once_more_regardless() -> None:
    fake = FakeClock()
    refusing = RefusingSurface(fake, refusals=100)
    with pytest.raises(RateLimited):
        await fake.run(_outbox(fake, refusing).write(PLACE, HELLO, WritePolicy.MUST_DELIVER))
    assert len(refusing.calls) == ATTEMPTS + 1

    delivered = RefusingSurface(fake, refusals=ATTEMPTS)
    await fake.run(_outbox(fake, delivered).write(PLACE, HELLO, WritePolicy.MUST_DELIVER))
    assert len(delivered.calls) == ATTEMPTS + 1 and len(delivered.writes) == 1


async def test_an_edit_replaces_the_message_it_names() -> None:
    fake = FakeClock()
    surface = RefusingSurface(fake)
    outbox = _outbox(fake, surface)

    ref = await fake.run(outbox.write(PLACE, HELLO, WritePolicy.MUST_DELIVER))
    await fake.run(outbox.write(PLACE, Edit(ref, OutMessage("hi")), WritePolicy.MUST_DELIVER))
    assert surface.messages[ref.message_id].history == ["hello", "hi"]


async def test_a_write_now_is_not_paced_and_its_refusal_propagates() -> None:
    fake = FakeClock()
    surface = RefusingSurface(fake, refusals=1)
    outbox = _outbox(fake, surface)

    async def scenario() -> None:
        busy = await _busy_for(fake, outbox.pacer, 5.0)
        with pytest.raises(RateLimited):
            await outbox.write(PLACE, HELLO, WritePolicy.NOW)
        await outbox.write(PLACE, HELLO, WritePolicy.NOW)
        busy.cancel()

    await fake.run(scenario())
    assert surface.calls == [0.0, 0.0]


class Recording(RateLimitingSurface):
    """A surface that records the calls a test cares about, optionally failing them."""

    def __init__(self, fake: FakeClock, error: Exception | None = None) -> None:
        super().__init__(fake.monotonic, ONE_PER_SECOND)
        self.error = error
        self.calls: list[tuple[str, object]] = []

    def _made(self, call: str, what: object) -> None:
        self.calls.append((call, what))
        if self.error is not None:
            raise self.error

    async def send_ephemeral(self, origin: Event, text: str) -> None:
        self._made("send_ephemeral", text)

    async def typing(self, place: Place) -> None:
        self._made("typing", place)


class WithStatus(Recording):
    """A surface with a status line (:class:`bot.kernel.ShowsActivity`) and no deletes."""

    async def show_activity(
        self, place: Place, status: ActivityKind, *, origin: Event | None = None
    ) -> None:
        self._made("show_activity", status)

    async def end_activity(
        self, place: Place, status: ActivityKind, *, origin: Event | None = None
    ) -> None:
        self._made("end_activity", status)


async def test_a_notice_goes_to_the_origin_at_once() -> None:
    fake = FakeClock()
    surface = Recording(fake)
    origin = Command(user=User("u1"), place=PLACE, name="help")
    await _outbox(fake, surface).write(PLACE, Notice(origin, "only you"), WritePolicy.NOW)
    assert surface.calls == [("send_ephemeral", "only you")]


async def test_activity_is_a_status_line_where_there_is_one_else_typing_while_thinking() -> None:
    fake = FakeClock()
    typing, status = Recording(fake), WithStatus(fake)
    for surface in (typing, status):
        outbox = _outbox(fake, surface)
        for activity in (
            Activity("thinking"),
            Activity("drawing"),
            Activity("thinking", ended=True),
            Typing(),
        ):
            await outbox.write(PLACE, activity, WritePolicy.BEST_EFFORT)
    assert typing.calls == [("typing", PLACE), ("typing", PLACE)]
    assert status.calls == [
        ("show_activity", "thinking"),
        ("show_activity", "drawing"),
        ("end_activity", "thinking"),
        ("typing", PLACE),
    ]


@pytest.mark.parametrize("error", [RateLimited(3.0), SurfaceError("gone")])
async def test_activity_the_platform_refuses_changes_nothing_else(error: Exception) -> None:
    fake = FakeClock()
    outbox = _outbox(fake, WithStatus(fake, error))
    await outbox.write(PLACE, Activity("thinking"), WritePolicy.BEST_EFFORT)


async def test_only_activity_is_written_on_a_best_effort() -> None:
    fake = FakeClock()
    with pytest.raises(TypeError):
        await _outbox(fake, Recording(fake)).write(PLACE, HELLO, WritePolicy.BEST_EFFORT)


async def test_a_write_the_surface_cannot_make_is_refused_before_any_call() -> None:
    fake = FakeClock()
    surface = Recording(fake)
    outbox = _outbox(fake, surface)
    origin = Command(user=User("u1"), place=PLACE, name="help")
    for operation in (Delete(MessageRef(PLACE, "m1")), Private(origin, OutMessage("hi"))):
        with pytest.raises(TypeError):
            await outbox.write(PLACE, operation, WritePolicy.NOW)
    assert surface.calls == []


class Spelling(Recording):
    """A surface that finds keyed posts, links messages, spells ``settings`` its own way and
    serves downloads."""

    def command_names(self, place: Place) -> CommandNames:
        return CommandNames(spellings={"settings": "genbot settings"})

    async def posted(self, place: Place, key: str) -> MessageRef | None:
        self._made("posted", key)
        return MessageRef(place, f"keyed-{key}")

    async def link(self, ref: MessageRef) -> str | None:
        self._made("link", ref)
        return f"https://example.test/{ref.message_id}"

    async def download(self, attachment: Attachment) -> bytes:
        self._made("download", attachment.filename)
        return b"bytes of " + attachment.filename.encode()


async def test_features_read_platforms_through_the_outbox_without_writing() -> None:
    fake = FakeClock()
    plain = Recording(fake)
    spelling = Spelling(fake)
    spelling.platform = "spelling"
    profile = PlatformProfile(max_text=123)
    spelling.profile = profile
    outbox = Outbox(SurfaceRegistry([plain, spelling]), Pacer(fake.clock, margin=0.0))
    there = Place("spelling", "w1", "c1")
    ref = MessageRef(there, "m1")

    assert outbox.platforms() == ("fake", "spelling")
    assert "spelling" in outbox and "slack" not in outbox
    assert outbox.profile("spelling") is profile
    assert outbox.can("spelling", FindsKeyedPosts) and not outbox.can("fake", FindsKeyedPosts)
    assert not outbox.can("slack", FindsKeyedPosts)
    assert outbox.command_names(there).typed("settings") == "/genbot settings"
    assert outbox.command_names(PLACE) == CommandNames()
    assert await outbox.posted(there, "k1") == MessageRef(there, "keyed-k1")
    assert await outbox.posted(PLACE, "k1") is None
    assert await outbox.link(ref) == "https://example.test/m1"
    assert await outbox.link(MessageRef(PLACE, "m1")) is None
    image = Attachment("cat.png", private=True)
    assert await outbox.download(there, image) == b"bytes of cat.png"
    assert spelling.calls == [("posted", "k1"), ("link", ref), ("download", "cat.png")]
    assert plain.calls == []


def _stream(until: asyncio.Event | None = None) -> Stream:
    return Stream(StreamDemand(Demand(unseen=10, since=None)), "edit", until=until)


async def _stream_write(
    outbox: Outbox, compose: Callable[[], Operation[T] | None], policy: Stream
) -> T:
    """A stream's write as the renderer makes it: named once there is room."""
    room = await outbox.room(PLACE, policy)
    return await room.write(compose())


async def test_a_stream_write_is_composed_once_there_is_room_with_the_newest_text() -> None:
    fake = FakeClock()
    surface = RefusingSurface(fake)
    outbox = _outbox(fake, surface)
    newest = ["first words"]

    async def scenario() -> MessageRef:
        busy = await _busy_for(fake, outbox.pacer, 2.0)
        write = asyncio.ensure_future(
            _stream_write(outbox, lambda: Post(OutMessage(newest[0])), _stream())
        )
        await fake.sleep(1.0)
        newest[0] = "first words and more"
        ref = await write
        await busy
        return ref

    ref = await fake.run(scenario())
    assert surface.messages[ref.message_id].text == "first words and more"
    assert surface.calls == [pytest.approx(3.0)]


async def test_a_stream_write_no_longer_wanted_writes_nothing_and_gives_its_room_back() -> None:
    fake = FakeClock()
    surface = RefusingSurface(fake)
    outbox = _outbox(fake, surface)

    async def scenario() -> float:
        with pytest.raises(WriteSkipped):
            await _stream_write(outbox, lambda: None, _stream())
        await outbox.pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True)
        return fake.now

    assert await fake.run(scenario()) == 0.0
    assert surface.calls == []


async def test_a_stream_write_waiting_when_the_stream_ends_writes_nothing() -> None:
    fake = FakeClock()
    surface = RefusingSurface(fake)
    outbox = _outbox(fake, surface)
    ended = asyncio.Event()

    async def scenario() -> None:
        busy = await _busy_for(fake, outbox.pacer, 5.0)
        write = asyncio.ensure_future(_stream_write(outbox, lambda: HELLO, _stream(ended)))
        await fake.sleep(1.0)
        ended.set()
        with pytest.raises(WriteSkipped):
            await write
        busy.cancel()

    await fake.run(scenario())
    assert surface.calls == [] and fake.now == pytest.approx(1.0)


async def test_a_rate_limited_stream_write_holds_the_channel_and_tells_the_renderer() -> None:
    fake = FakeClock()
    surface = RefusingSurface(fake, refusals=1, retry_after=3.0)
    outbox = _outbox(fake, surface)

    async def scenario() -> float:
        with pytest.raises(RateLimited):
            await _stream_write(outbox, lambda: HELLO, _stream())
        await outbox.pacer.acquire(PLACE, ONE_PER_SECOND, urgent=True)
        return fake.now

    assert await fake.run(scenario()) >= 3.0
    assert surface.calls == [0.0]


def _written(method: str) -> float:
    labels = {"platform": "fake", "method": method}
    return REGISTRY.get_sample_value("genbot_platform_writes_total", labels) or 0.0


def _refused(method: str) -> float:
    labels = {"platform": "fake", "method": method}
    return REGISTRY.get_sample_value("genbot_platform_rate_limited_total", labels) or 0.0


async def test_every_platform_call_is_counted_by_its_method_and_so_are_refusals() -> None:
    fake = FakeClock()
    surface = RefusingSurface(fake, refusals=1, retry_after=1.0)
    outbox = _outbox(fake, surface)
    before = (_written("send"), _refused("send"), _written("edit"))

    ref = await fake.run(outbox.write(PLACE, HELLO, WritePolicy.MUST_DELIVER))
    await fake.run(outbox.write(PLACE, Edit(ref, OutMessage("hi")), WritePolicy.MUST_DELIVER))
    after = (_written("send"), _refused("send"), _written("edit"))
    assert [b - a for a, b in zip(before, after, strict=True)] == [2, 1, 1]
