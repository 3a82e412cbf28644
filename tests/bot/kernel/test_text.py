from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.kernel import MIN_SPLIT_ROOM, cut_chunk, split_chunks, split_text

REOPEN_RE = re.compile(r"(```[\w+#.\-]*\n)?")


def fence_lines(text: str) -> int:
    """Lines opening or closing a code block, counted independently of bot.kernel.text."""
    count = 0
    for line in text.split("\n"):
        stripped = line.lstrip(" ")
        if len(line) - len(stripped) <= 3 and stripped.startswith("```"):
            count += 1
    return count


words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz,.!?'éß中😀", min_size=1, max_size=12)
prose_line = st.lists(words, min_size=1, max_size=14).map(" ".join)
paragraph = st.lists(prose_line, min_size=1, max_size=4).map("\n".join)
code_line = st.text(alphabet="abcdefghij (){}=+:;#'\" \t0123456789", max_size=40)
code_block = st.builds(
    lambda lang, lines: f"```{lang}\n" + "\n".join(lines) + "\n```",
    st.sampled_from(["", "python", "js", "c++", "sh"]),
    st.lists(code_line, min_size=0, max_size=25),
)
document = st.lists(st.one_of(paragraph, code_block), min_size=1, max_size=12).map("\n\n".join)
limits = st.integers(min_value=MIN_SPLIT_ROOM + 40, max_value=400)
any_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=1500) | st.text(
    alphabet="ab `\n", max_size=1500
)


@settings(max_examples=300, deadline=None)
@given(any_text, st.integers(min_value=MIN_SPLIT_ROOM, max_value=300), st.integers(0, 30))
def test_any_text_chunks_fit_and_concatenate_to_the_text(
    text: str, limit: int, reserve: int
) -> None:
    chunks = split_chunks(text, limit + reserve, reserve=reserve)
    assert "".join(chunk.body for chunk in chunks) == text
    for chunk in chunks:
        assert len(chunk.text) <= limit
        assert chunk.text == chunk.reopen + chunk.body + chunk.close
        assert REOPEN_RE.fullmatch(chunk.reopen)
        assert chunk.close in ("", "```", "\n```")
        assert chunk.body or text == "", "every chunk makes progress"
    assert chunks[-1].close == ""
    assert [c.start for c in chunks[1:]] == [c.end for c in chunks[:-1]]


@settings(max_examples=150, deadline=None)
@given(document, limits, st.data())
def test_splitting_from_a_later_start_covers_exactly_the_rest(
    text: str, limit: int, data: st.DataObject
) -> None:
    start = data.draw(st.integers(0, len(text)))
    chunks = split_chunks(text, limit, start=start)
    assert "".join(chunk.body for chunk in chunks) == text[start:]
    assert all(len(chunk.text) <= limit for chunk in chunks)


@settings(max_examples=300, deadline=None)
@given(document, limits)
def test_markdown_chunks_keep_fences_balanced_and_words_whole(text: str, limit: int) -> None:
    chunks = split_chunks(text, limit)
    assert "".join(chunk.body for chunk in chunks) == text
    for chunk in chunks:
        assert len(chunk.text) <= limit
        assert fence_lines(chunk.text) % 2 == 0, chunk.text
    for chunk in chunks[:-1]:
        assert text[chunk.end - 1].isspace(), f"cut inside a word at {chunk.end}"


@settings(max_examples=100, deadline=None)
@given(document, limits)
def test_a_reopened_block_keeps_its_language(text: str, limit: int) -> None:
    for chunk in split_chunks(text, limit):
        if chunk.reopen:
            block_starts = [m for m in re.finditer(r"^```(\S*)\n", text[: chunk.start], re.M)]
            assert chunk.reopen == f"```{block_starts[-1].group(1)}\n"


def test_prefers_a_paragraph_end_then_a_line_end_then_a_space() -> None:
    first = "word " * 30
    text = first + "\n\n" + "next " * 30
    assert split_text(text, 200)[0] == first + "\n\n"
    text = "a" * 120 + "\n" + "b " * 30 + "c" * 10
    assert split_chunks(text, 180)[0].body == "a" * 120 + "\n"
    text = "word " * 100
    chunks = split_chunks(text, 100)
    assert all(c.body.endswith(" ") for c in chunks[:-1])


def test_a_paragraph_end_too_early_in_the_chunk_loses_to_a_later_line_end() -> None:
    text = "intro\n\n" + "line of text\n" * 20
    first = split_chunks(text, 120)[0]
    assert first.body.endswith("line of text\n")
    assert len(first.body) > 60


def test_a_word_longer_than_the_limit_is_cut_hard() -> None:
    assert split_text("x" * 5000, 2000) == ["x" * 2000, "x" * 2000, "x" * 1000]


def test_a_code_block_cut_in_two_is_closed_and_reopened_with_its_language() -> None:
    code = "\n".join(f"print({i})" for i in range(40))
    text = f"Here:\n\n```python\n{code}\n```\nDone."
    texts = split_text(text, 150)
    assert len(texts) > 2
    for piece in texts[:-1]:
        assert piece.endswith("\n```")
    for piece in texts[1:]:
        assert piece.startswith("```python\n")
    for piece in texts:
        assert fence_lines(piece) == 2
    assert texts[-1].endswith("```\nDone.")


def test_the_reserve_leaves_room_for_a_marker() -> None:
    chunks = split_chunks("word " * 200, 100, reserve=10)
    assert max(len(c.text) for c in chunks) <= 90


def test_start_splits_the_rest_and_reopens_a_block_it_falls_in() -> None:
    text = "```sh\necho 1\necho 2\necho 3\n```\nafter"
    start = text.index("echo 2")
    chunks = split_chunks(text, 100, start=start)
    assert chunks[0].reopen == "```sh\n"
    assert "".join(c.body for c in chunks) == text[start:]


def test_an_unclosed_block_at_the_end_is_reported() -> None:
    assert split_chunks("text\n```py\nx = 1", 100)[-1].ends_in_fence
    assert not split_chunks("text\n```py\nx = 1\n```", 100)[-1].ends_in_fence


def test_rejects_a_budget_too_small_for_fence_markers() -> None:
    with pytest.raises(ValueError, match="at least"):
        split_chunks("text", 50, reserve=20)


def test_empty_text_is_one_empty_chunk() -> None:
    assert split_text("", 100) == [""]


def test_a_cut_never_takes_back_text_already_shown() -> None:
    text = "one two three four five six seven eight nine ten.\n\neleven twelve thirteen"
    shown = text.index("eleven") + 2
    plain = split_chunks(text, 60)[0]
    kept = cut_chunk(text, 60, start=0, keep=shown)
    assert plain.end < shown <= kept.end and kept.body == text[: kept.end]
    assert text[kept.end - 1] == " ", "the cut still prefers a word end"
    fenced = "```python\n" + "x = 1\n" * 20
    cut = cut_chunk(fenced, 60, start=0, keep=55)
    assert cut.end >= 55 and len(cut.text) <= 60 and cut.close.endswith("```")
