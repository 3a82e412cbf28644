"""The stream renderer on a surface that streams messages itself (virtual clock)."""

from __future__ import annotations

from types import MappingProxyType

from bot.features.chat.renderer import MARKER, StreamEnd
from bot.kernel import Command, Place, PlatformProfile, User, WriteKind
from bot.outbox.pacing import Pacer
from tests.bot.features.chat.rendering import render_stream
from tests.bot.features.chat.test_renderer import Producer, words
from tests.fakes.clock import FakeClock
from tests.fakes.streaming_surface import StreamingSurface

PLACE = Place("fake", "w1", "c1", "t1")
TIERS: MappingProxyType[WriteKind, int] = MappingProxyType(
    {"stream_start": 20, "stream_append": 100, "stream_stop": 20}
)
SLACK = PlatformProfile(
    max_text=4000,
    edits_per_window_per_channel=5,
    edit_window_seconds=5.0,
    edits_per_minute_per_workspace=50,
    min_seconds_between_edits_of_one_message=1.0,
    writes_per_minute_per_workspace=TIERS,
)
ORIGIN = Command(user=User("u1"), place=PLACE, name="chat")


def setup(
    profile: PlatformProfile = SLACK, *, window_seconds: float = 300.0, decline: bool = False
) -> tuple[FakeClock, StreamingSurface, Pacer]:
    fake = FakeClock()
    surface = StreamingSurface(
        fake.monotonic, profile, window_seconds=window_seconds, decline=decline
    )
    return fake, surface, Pacer(fake.clock, margin=0.0)


async def test_an_answer_is_streamed_natively_with_only_new_text_and_ends_exact() -> None:
    fake, surface, pacer = setup()
    producer = Producer(fake, words(200), every=0.05, end=StreamEnd("stop"))

    result = await fake.run(render_stream(producer.stream(), surface, PLACE, pacer, origin=ORIGIN))

    final = producer.full.rstrip()
    assert result.landed and result.text == final and result.streamed == 1
    assert surface.rate_limited == 0 and surface.texts_in(PLACE) == [final]
    (stream,) = surface.streams.values()
    kinds = [call.kind for call in stream.calls]
    assert kinds[0] == "stream_start" and kinds[-1] == "stream_stop"
    assert set(kinds[1:-1]) == {"stream_append"} and len(kinds) >= 10
    assert "".join(call.text for call in stream.calls) == final
    assert all(MARKER not in call.text for call in stream.calls)
    assert surface.messages[stream.ref.message_id].origin is ORIGIN


async def test_native_appends_are_paced_by_their_own_tier_not_the_edit_window() -> None:
    profile = PlatformProfile(
        max_text=4000,
        edits_per_window_per_channel=100,
        edit_window_seconds=5.0,
        edits_per_minute_per_workspace=5,
        writes_per_minute_per_workspace=TIERS,
    )
    fake, surface, pacer = setup(profile)
    producer = Producer(fake, words(400), every=0.05)

    result = await fake.run(render_stream(producer.stream(), surface, PLACE, pacer))

    assert result.landed and surface.rate_limited == 0
    appends = [c for c in surface.stream_calls if c.kind == "stream_append"]
    assert len(appends) > 5, "appends are not held to the 5-a-minute edit window"
    stamps = [c.at for c in appends]
    assert all(len([t for t in stamps if s <= t < s + 60]) <= 100 for s in stamps)


async def test_long_answers_continue_in_new_streams_without_taking_text_back() -> None:
    fake, surface, pacer = setup(
        PlatformProfile(max_text=300, writes_per_minute_per_workspace=TIERS)
    )
    code = "".join(f"    print('line {index}')  # explain\n" for index in range(40))
    answer = "Here is the script:\n\n```python\n" + code + "```\n\nThat is all. " + "bye " * 80
    pieces = [answer[i : i + 7] for i in range(0, len(answer), 7)]
    producer = Producer(fake, pieces, every=1.5)

    result = await fake.run(render_stream(producer.stream(), surface, PLACE, pacer))

    assert result.landed and result.text == answer.rstrip()
    finals = [surface.messages[ref.message_id].text for ref in result.messages]
    assert len(finals) >= 5 and result.streamed == len(finals)
    assert finals == [chunk.text for chunk in result.chunks]
    assert "".join(chunk.body for chunk in result.chunks) == result.text
    for text in finals:
        assert len(text) <= 300
        fences = [line for line in text.split("\n") if line.lstrip().startswith("```")]
        assert len(fences) % 2 == 0, text
    assert all(stream.stopped for stream in surface.streams.values())
    assert [w for w in surface.writes if w.kind == "edit"] == [], "no text was taken back"


async def test_a_surface_that_declines_streaming_gets_posts_and_edits() -> None:
    fake, surface, pacer = setup(decline=True)
    producer = Producer(fake, words(60), every=0.05)

    result = await fake.run(render_stream(producer.stream(), surface, PLACE, pacer))

    assert result.landed and result.streamed == 0 and surface.starts_asked == 1
    assert surface.texts_in(PLACE) == [producer.full.rstrip()]
    kinds = [w.kind for w in surface.writes]
    assert kinds[0] == "send" and set(kinds[1:]) == {"edit"}
    assert any(w.text.endswith(MARKER) for w in surface.writes)


async def test_a_stream_the_platform_ended_is_finished_with_an_edit() -> None:
    fake, surface, pacer = setup(window_seconds=2.0)
    producer = Producer(fake, words(100), every=0.05)

    result = await fake.run(render_stream(producer.stream(), surface, PLACE, pacer))

    final = producer.full.rstrip()
    assert result.landed and result.text == final
    (ref,) = result.messages
    assert surface.texts_in(PLACE) == [final]
    kinds = [w.kind for w in surface.writes if w.message_id == ref.message_id]
    assert kinds[0] == "stream_start" and "stream_stop" not in kinds
    assert kinds[-1] == "edit", "finished on the same message with an edit"
