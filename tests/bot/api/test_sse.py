"""The SSE parser: the standard's line rules, and any split of a stream gives the same events."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.api.sse import MAX_LINE_CHARS, SseEvent, SseParser, SseTooLarge


def parse(*reads: bytes) -> list[SseEvent]:
    parser = SseParser()
    events: list[SseEvent] = []
    for read in reads:
        events.extend(parser.feed(read))
    events.extend(parser.close())
    return events


def test_data_lines_and_done() -> None:
    stream = b'data: {"a": 1}\n\ndata: [DONE]\n\n'
    assert [e.data for e in parse(stream)] == ['{"a": 1}', "[DONE]"]


def test_multi_line_data_is_joined_with_newlines() -> None:
    assert parse(b"data: one\ndata: two\ndata:three\n\n") == [SseEvent("one\ntwo\nthree")]


def test_only_one_leading_space_is_removed() -> None:
    assert parse(b"data:  two spaces\n\n") == [SseEvent(" two spaces")]


def test_comments_and_keep_alives_dispatch_nothing() -> None:
    assert parse(b": keep-alive\n\n:\n\ndata: x\n: inside\n\n") == [SseEvent("x")]


def test_event_and_id_fields_are_kept_unknown_fields_ignored() -> None:
    stream = b"event: update\nid: 7\nfoo: bar\nretry: 1500\ndata: x\n\ndata: y\n\n"
    parser = SseParser()
    assert parser.feed(stream) == [SseEvent("x", "update", "7"), SseEvent("y", "message", "7")]
    assert parser.retry_ms == 1500


def test_field_without_colon_is_a_field_with_empty_value() -> None:
    assert parse(b"data\n\n") == [SseEvent("")]


def test_blank_line_without_data_dispatches_nothing() -> None:
    assert parse(b"event: ping\n\n\n\n") == []


def test_cr_and_crlf_line_endings() -> None:
    assert parse(b"data: a\r\rdata: b\r\n\r\n") == [SseEvent("a"), SseEvent("b")]


def test_crlf_split_between_reads_is_one_line_break() -> None:
    assert parse(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n") == [SseEvent("a"), SseEvent("b")]


def test_utf8_character_split_between_reads() -> None:
    encoded = "data: héllo 🌱\n\n".encode()
    split = encoded.index(b"\xf0") + 2
    assert parse(encoded[:split], encoded[split:]) == [SseEvent("héllo 🌱")]


def test_leading_bom_is_skipped() -> None:
    assert parse(b"\xef\xbb\xbfdata: x\n\n") == [SseEvent("x")]


def test_unterminated_event_at_end_is_dropped_and_reported_pending() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\n\ndata: [DONE]\n") == [SseEvent("a")]
    assert parser.close() == []
    assert parser.pending


def test_a_line_that_never_ends_is_refused_past_the_cap() -> None:
    parser = SseParser()
    read = b"x" * (64 * 1024)
    assert parser.feed(b"data: ") == []
    with pytest.raises(SseTooLarge, match="line is longer"):
        for _ in range(MAX_LINE_CHARS // len(read) + 1):
            assert parser.feed(read) == []


def test_an_event_of_many_lines_is_refused_past_the_cap() -> None:
    parser = SseParser(max_line_chars=100, max_event_chars=250)
    assert parser.feed(b"data: " + b"y" * 90 + b"\n" + b"data: " + b"y" * 90 + b"\n") == []
    with pytest.raises(SseTooLarge, match="event is larger"):
        parser.feed(b"data: " + b"y" * 90 + b"\n")


def test_events_just_under_the_caps_pass() -> None:
    parser = SseParser(max_line_chars=10, max_event_chars=20)
    assert parser.feed(b"data:1234\ndata:12345\r\n\r\n") == [SseEvent("1234\n12345")]
    assert parser.feed(b"data:" + b"z" * 5 + b"\n\n") == [SseEvent("zzzzz")]


@dataclass(frozen=True)
class Line:
    kind: str
    value: str


TEXT = st.text(
    alphabet=st.characters(exclude_characters="\r\n\x00", exclude_categories=["Cs"]),
    max_size=12,
)
LINE = st.one_of(
    st.builds(Line, st.just("data"), TEXT),
    st.builds(Line, st.just("comment"), TEXT),
    st.builds(Line, st.just("event"), TEXT),
    st.builds(Line, st.just("id"), TEXT),
)
BLOCKS = st.lists(st.lists(LINE, max_size=5), max_size=6)


def render(blocks: list[list[Line]], newline: str) -> bytes:
    out: list[str] = []
    for block in blocks:
        for line in block:
            prefix = ":" if line.kind == "comment" else f"{line.kind}: "
            out.append(prefix + line.value + newline)
        out.append(newline)
    return "".join(out).encode()


def expected(blocks: list[list[Line]]) -> list[SseEvent]:
    events: list[SseEvent] = []
    last_id = ""
    for block in blocks:
        data: list[str] = []
        event_type = ""
        for line in block:
            if line.kind == "data":
                data.append(line.value)
            elif line.kind == "event":
                event_type = line.value
            elif line.kind == "id":
                last_id = line.value
        if data:
            events.append(SseEvent("\n".join(data), event_type or "message", last_id))
    return events


def split(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(stream)) for cut in cuts})
    pieces, start = [], 0
    for point in points:
        pieces.append(stream[start:point])
        start = point
    pieces.append(stream[start:])
    return pieces


@settings(deadline=None)
@given(
    blocks=BLOCKS,
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=30),
)
def test_any_split_of_any_stream_yields_the_expected_events(
    blocks: list[list[Line]], newline: str, cuts: list[int]
) -> None:
    stream = render(blocks, newline)
    assert parse(*split(stream, cuts)) == expected(blocks)


@settings(deadline=None)
@given(blocks=BLOCKS, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=30))
def test_crlf_and_lf_streams_yield_the_same_events(
    blocks: list[list[Line]], cuts: list[int]
) -> None:
    assert parse(*split(render(blocks, "\r\n"), cuts)) == parse(render(blocks, "\n"))


@settings(deadline=None)
@given(blocks=BLOCKS)
def test_byte_at_a_time_equals_whole(blocks: list[list[Line]]) -> None:
    stream = render(blocks, "\r\n")
    assert parse(*[stream[i : i + 1] for i in range(len(stream))]) == parse(stream)


def test_single_line_events_are_read_when_the_data_is_whole() -> None:
    # A provider that frames each event as one line (docs/provider.md#sse-framing).
    stream = b'data: {"a": 1}\ndata: {"b": 2}\ndata: [DONE]\n'
    assert parse(stream) == []
    parser = SseParser(whole_lines=frozenset({"[DONE]"}))
    events = [*parser.feed(stream[:9]), *parser.feed(stream[9:]), *parser.close()]
    assert [e.data for e in events] == ['{"a": 1}', '{"b": 2}', "[DONE]"]
    standard = SseParser(whole_lines=frozenset({"whole"}))
    assert standard.feed(b'data: who\ndata: le\n\ndata: whole\n\ndata: {"a":\ndata: 1}\n\n') == [
        SseEvent("who\nle"),
        SseEvent("whole"),
        SseEvent('{"a":\n1}'),
    ]
    assert standard.feed(b"data: [1, 2]\ndata: {not json}\n\n") == [SseEvent("[1, 2]\n{not json}")]
