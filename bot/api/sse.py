"""An incremental server-sent events parser (WHATWG HTML, "Interpreting an event stream").

Feed it bytes as they arrive, in any split; it yields complete events. Handles LF, CRLF and CR
line endings (including a CRLF split across two reads), multi-byte UTF-8 characters split across
reads, a leading byte-order mark, comment lines (``:``), multi-line ``data``, and the ``event``,
``id`` and ``retry`` fields. An event is dispatched at a blank line only; a partial event left
when the stream ends is discarded, as the standard requires.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class SseEvent:
    """One dispatched event. ``event`` defaults to ``"message"``; ``id`` is the last event id."""

    data: str
    event: str = "message"
    id: str = ""


class SseParser:
    """Turns a byte stream into :class:`SseEvent` objects, one :meth:`feed` call per read."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._line = ""
        self._after_cr = False
        self._at_start = True
        self._data: list[str] = []
        self._event_type = ""
        self._last_id = ""
        self.retry_ms: int | None = None
        """The last ``retry`` value the server sent, in milliseconds."""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse one read; return the events it completed."""
        return list(self._lines_to_events(self._split(self._decoder.decode(chunk))))

    def close(self) -> list[SseEvent]:
        """Signal the end of the stream. Returns no events: per the standard, an event not
        terminated by a blank line is dropped. Afterwards :attr:`pending` tells whether one was."""
        tail = self._decoder.decode(b"", final=True)
        return list(self._lines_to_events(self._split(tail)))

    @property
    def pending(self) -> bool:
        """Some data was received that no blank line has dispatched yet."""
        return bool(self._data) or bool(self._line)

    def _split(self, text: str) -> Iterator[str]:
        if self._at_start and text:
            self._at_start = False
            if text.startswith("\ufeff"):
                text = text[1:]
        start = 0
        for position, char in enumerate(text):
            if char == "\n" and self._after_cr and position == start:
                self._after_cr = False
                start = position + 1
                continue
            self._after_cr = False
            if char in "\r\n":
                line = self._line + text[start:position]
                self._line = ""
                start = position + 1
                self._after_cr = char == "\r"
                yield line
        self._line += text[start:]

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

    def _field(self, name: str, value: str) -> None:
        if name == "data":
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
        self._data, self._event_type = [], ""
        if not data:
            return None
        return SseEvent(data="\n".join(data), event=event_type or "message", id=self._last_id)
