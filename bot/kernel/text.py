"""Text for chat platforms: splitting at a length limit.

Lengths are counted in Python characters (code points). Fenced code blocks are lines that start
(after at most three spaces) with three backticks; an opening line's first word is its language
tag. Inline triple backticks inside a line are plain text to the splitter.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

FENCE = "```"
MAX_LANG_CHARS = 20
MIN_SPLIT_ROOM = 40
"""The smallest ``limit - reserve`` :func:`split_chunks` accepts: room for a reopened fence with
its language tag, a closing fence and some text."""

_LANG_RE = re.compile(rf"[\w+#.\-]{{1,{MAX_LANG_CHARS}}}")


@dataclass(frozen=True)
class Chunk:
    """One message's worth of a longer text.

    ``body`` is exactly ``source[start:end]``; ``text`` is what to post:
    ``reopen + body + close``. ``reopen`` re-opens a code block the previous chunk was cut
    inside (same language tag); ``close`` closes it when this chunk is cut inside one.
    ``ends_in_fence`` tells whether the end of ``body`` lies inside a code block (for the last
    chunk, whose block is left open as written).
    """

    start: int
    end: int
    body: str
    reopen: str
    close: str
    ends_in_fence: bool
    text: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", self.reopen + self.body + self.close)


@dataclass(frozen=True)
class _Fence:
    line_start: int
    open_end: int
    close_start: int
    close_end: int
    lang: str


def _scan_fences(text: str) -> list[_Fence]:
    fences: list[_Fence] = []
    opener: tuple[int, int, str] | None = None
    start = 0
    length = len(text)
    while start < length:
        newline = text.find("\n", start)
        end = length if newline < 0 else newline + 1
        line = text[start:end]
        stripped = line.lstrip(" ")
        if len(line) - len(stripped) <= 3 and stripped.startswith(FENCE):
            if opener is None:
                info = stripped[len(FENCE) :].strip().split(maxsplit=1)
                match = _LANG_RE.fullmatch(info[0]) if info else None
                opener = (start, end, match.group(0) if match else "")
            else:
                fences.append(_Fence(opener[0], opener[1], start, end, opener[2]))
                opener = None
        start = end
    if opener is not None:
        fences.append(_Fence(opener[0], opener[1], length, length, opener[2]))
    return fences


class _FenceMap:
    """Answers, for a position, whether it lies inside a code block or inside a fence line."""

    def __init__(self, text: str) -> None:
        self.fences = _scan_fences(text)
        self._starts = [f.line_start for f in self.fences]

    def _around(self, position: int) -> _Fence | None:
        index = bisect.bisect_right(self._starts, position) - 1
        if index < 0:
            return None
        fence = self.fences[index]
        return fence if position <= fence.close_end else None

    def lang_inside(self, position: int) -> str | None:
        """The language tag when ``position`` is inside a block (between its fence lines)."""
        fence = self._around(position)
        if fence is not None and fence.open_end <= position <= fence.close_start:
            return fence.lang
        return None

    def inside_fence_line(self, position: int) -> bool:
        fence = self._around(position)
        if fence is None:
            return False
        in_opener = fence.line_start < position < fence.open_end
        in_closer = fence.close_start < position < fence.close_end
        return in_opener or in_closer


def _reopen(lang: str | None) -> str:
    return "" if lang is None else f"{FENCE}{lang}\n"


def _close(text: str, end: int, lang: str | None) -> str:
    if lang is None:
        return ""
    return FENCE if text[end - 1] == "\n" else "\n" + FENCE


def _choose_cut(text: str, pos: int, room: int, fences: _FenceMap, floor: int = 0) -> int:
    reopen_len = len(_reopen(fences.lang_inside(pos)))
    latest = min(len(text) - 1, pos + room - reopen_len)
    best: dict[str, int] = {}
    fallback = 0
    for end in range(latest, max(pos, floor - 1), -1):
        lang = fences.lang_inside(end)
        if reopen_len + (end - pos) + len(_close(text, end, lang)) > room:
            continue
        if fallback == 0:
            fallback = end
        if fences.inside_fence_line(end):
            continue
        before = text[end - 1]
        if before == "\n":
            kind = "paragraph" if end - 2 >= pos and text[end - 2] == "\n" else "line"
        elif before.isspace():
            kind = "word"
        else:
            kind = "hard"
        best.setdefault(kind, end)
        if kind in ("paragraph", "line"):
            best.setdefault("line", end)
            best.setdefault("word", end)
        if kind == "paragraph":
            break
    threshold = pos + (latest - pos) // 2
    for kind in ("paragraph", "line", "word"):
        if best.get(kind, 0) >= threshold:
            return best[kind]
    boundaries = [best[k] for k in ("paragraph", "line", "word") if k in best]
    if boundaries:
        return max(boundaries)
    return best.get("hard", fallback)


def split_chunks(text: str, limit: int, *, reserve: int = 0, start: int = 0) -> list[Chunk]:
    """Cut ``text[start:]`` into chunks whose ``text`` is at most ``limit - reserve`` long.

    Cuts prefer paragraph ends, then line ends, then spaces; a cut leaves the separator at the
    end of the earlier chunk, so the bodies concatenate to ``text[start:]`` exactly. A cut
    inside a code block closes it at the end of the chunk and reopens it, with the same
    language tag, at the start of the next. A word longer than the room is cut where it must.
    Fences stay balanced in every chunk as long as each fence line fits in the room.
    Always returns at least one chunk (possibly with an empty body).
    """
    room = limit - reserve
    if room < MIN_SPLIT_ROOM:
        raise ValueError(f"limit - reserve must be at least {MIN_SPLIT_ROOM} (got {room})")
    if not 0 <= start <= len(text):
        raise ValueError(f"start {start} is outside the text (length {len(text)})")
    fences = _FenceMap(text)
    chunks: list[Chunk] = []
    pos = start
    while True:
        reopen = _reopen(fences.lang_inside(pos))
        if len(reopen) + len(text) - pos <= room:
            end_lang = fences.lang_inside(len(text))
            body = text[pos:]
            chunks.append(Chunk(pos, len(text), body, reopen, "", end_lang is not None))
            return chunks
        end = _choose_cut(text, pos, room, fences)
        lang = fences.lang_inside(end)
        close = _close(text, end, lang)
        chunks.append(Chunk(pos, end, text[pos:end], reopen, close, lang is not None))
        pos = end


def cut_chunk(text: str, limit: int, *, start: int, keep: int) -> Chunk:
    """The first chunk of ``text[start:]``, cut as :func:`split_chunks` cuts, but ending no
    earlier than ``keep`` (text a platform already shows and cannot take back) when a cut there
    fits in ``limit`` with the closing fence it may need."""
    fences = _FenceMap(text)
    end = _choose_cut(text, start, limit, fences, keep)
    if end <= start:
        end = _choose_cut(text, start, limit, fences)
    lang = fences.lang_inside(end)
    reopen = _reopen(fences.lang_inside(start))
    return Chunk(start, end, text[start:end], reopen, _close(text, end, lang), lang is not None)


def split_text(text: str, limit: int, *, reserve: int = 0) -> list[str]:
    """The texts of :func:`split_chunks`: messages of at most ``limit - reserve`` characters."""
    return [chunk.text for chunk in split_chunks(text, limit, reserve=reserve)]
