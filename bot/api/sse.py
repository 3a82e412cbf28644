"""An incremental server-sent events parser (WHATWG HTML, "Interpreting an event stream").

Feed it bytes as they arrive, in any split; it yields complete events. Handles LF, CRLF and CR
line endings (including a CRLF split across two reads), multi-byte UTF-8 characters split across
reads, a leading byte-order mark, comment lines (``:``), multi-line ``data``, and the ``event``,
``id`` and ``retry`` fields. An event is dispatched at a blank line only; a partial event left
when the stream ends is discarded, as the standard requires.

With ``whole_lines`` (the data lines that are an event by themselves), a ``data`` line that
makes the event's data one whole JSON object, or one of ``whole_lines``, dispatches it at once
instead of at the next blank line. That reads a provider that sends each event as a single
``data:`` line with no blank line between them (docs/provider.md#sse-framing) as well as the
standard framing; multi-line data still ends at a blank line.

Memory is bounded: a line longer than ``max_line_chars`` or an event whose data exceeds
``max_event_chars`` (both 1 MiB characters by default) raises :class:`SseTooLarge`; a partial
line is kept as a list of pieces, so a line arriving in many reads costs linear time.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

MAX_LINE_CHARS = 1 << 20
MAX_EVENT_CHARS = 1 << 20
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class SseTooLarge(ValueError):
    """A line or an event of the stream is larger than the parser accepts."""


@dataclass(frozen=True)
class SseEvent:
    """One dispatched event. ``event`` defaults to ``"message"``; ``id`` is the last event id."""

    data: str
    event: str = "message"
    id: str = ""


class SseParser:
    """Turns a byte stream into :class:`SseEvent` objects, one :meth:`feed` call per read."""

    def __init__(
        self,
        *,
        max_line_chars: int = MAX_LINE_CHARS,
        max_event_chars: int = MAX_EVENT_CHARS,
        whole_lines: frozenset[str] | None = None,
    ) -> None:
        self.max_line_chars = max_line_chars
        self.max_event_chars = max_event_chars
        self._whole_lines = whole_lines
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pieces: list[str] = []
        self._line_chars = 0
        self._after_cr = False
        self._at_start = True
        self._data: list[str] = []
        self._data_chars = 0
        self._event_type = ""
        self._last_id = ""
        self.retry_ms: int | None = None
        """The last ``retry`` value the server sent, in milliseconds."""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse one read; return the events it completed. Raises :class:`SseTooLarge` past
        the size limits (the parser is then unusable)."""
        return list(self._lines_to_events(self._split(self._decoder.decode(chunk))))

    def close(self) -> list[SseEvent]:
        """Signal the end of the stream. Returns no events: per the standard, an event not
        terminated by a blank line is dropped. Afterwards :attr:`pending` tells whether one was."""
        tail = self._decoder.decode(b"", final=True)
        return list(self._lines_to_events(self._split(tail)))

    @property
    def pending(self) -> bool:
        """Some data was received that no blank line has dispatched yet."""
        return bool(self._data) or bool(self._pieces)

    def _split(self, text: str) -> Iterator[str]:
        if not text:
            return
        if self._at_start:
            self._at_start = False
            if text.startswith("\ufeff"):
                text = text[1:]
        start = 1 if self._after_cr and text.startswith("\n") else 0
        for line_break in _LINE_BREAK.finditer(text, start):
            self._keep(text[start : line_break.start()])
            line = "".join(self._pieces)
            self._pieces, self._line_chars = [], 0
            start = line_break.end()
            yield line
        self._after_cr = text.endswith("\r")
        self._keep(text[start:])

    def _keep(self, piece: str) -> None:
        if not piece:
            return
        self._line_chars += len(piece)
        if self._line_chars > self.max_line_chars:
            raise SseTooLarge(f"a stream line is longer than {self.max_line_chars} characters")
        self._pieces.append(piece)

    def _lines_to_events(self, lines: Iterable[str]) -> Iterator[SseEvent]:
        for line in lines:
            if not line:
                event = self._dispatch()
                if event is not None:
                    yield event
                continue
            if line.startswith(":"):
                continue
            name, colon, value = line.partition(":")
            if colon and value.startswith(" "):
                value = value[1:]
            self._field(name, value)
            if name == "data" and self._whole():
                event = self._dispatch()
                if event is not None:
                    yield event

    def _whole(self) -> bool:
        """Whether the event's data so far is a whole event by itself (see ``whole_lines``)."""
        if self._whole_lines is None:
            return False
        text = "\n".join(self._data).strip()
        if text in self._whole_lines:
            return True
        if not (text.startswith("{") and text.endswith("}")):
            return False
        try:
            json.loads(text)
        except ValueError:
            return False
        return True

    def _field(self, name: str, value: str) -> None:
        if name == "data":
            self._data_chars += len(value) + 1
            if self._data_chars > self.max_event_chars:
                raise SseTooLarge(
                    f"a stream event is larger than {self.max_event_chars} characters"
                )
            self._data.append(value)
        elif name == "event":
            self._event_type = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)

    def _dispatch(self) -> SseEvent | None:
        data, event_type = self._data, self._event_type
        self._data, self._event_type, self._data_chars = [], "", 0
        if not data:
            return None
        return SseEvent(data="\n".join(data), event=event_type or "message", id=self._last_id)
