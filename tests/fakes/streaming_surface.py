"""A :class:`~tests.fakes.surface.RateLimitingSurface` that also streams messages natively, the way
Slack's ``chat.startStream`` / ``appendStream`` / ``stopStream`` do, on the virtual clock.

A stream's text only grows; every streaming call counts against its channel and against the
workspace window of its own kind (``profile.writes_per_minute_per_workspace``, else the shared
one), and is refused with :class:`RateLimited` beyond them. A stream older than
``window_seconds`` answers :class:`StreamExpired`; ``decline=True`` makes ``start_stream``
answer ``None`` (the platform does not stream there).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.kernel import ButtonRows, Event, MessageRef, Place, StreamExpired, User, WriteKind
from tests.fakes.surface import Posted, RateLimitingSurface, Write


@dataclass
class StreamCall:
    at: float
    kind: WriteKind
    message_id: str
    text: str


@dataclass
class FakeNativeStream:
    surface: StreamingSurface
    ref: MessageRef
    started: float
    stopped: bool = False
    calls: list[StreamCall] = field(default_factory=list)
    buttons: ButtonRows = ()

    async def append(self, text: str) -> None:
        self.surface.stream_write(self, "stream_append", text)

    async def stop(self, text: str = "", buttons: ButtonRows = ()) -> None:
        self.surface.stream_write(self, "stream_stop", text)
        self.stopped = True
        self.buttons = buttons


class StreamingSurface(RateLimitingSurface):
    def __init__(
        self,
        monotonic: Callable[[], float],
        *args: object,
        window_seconds: float = 300.0,
        decline: bool = False,
        **kwargs: object,
    ) -> None:
        super().__init__(monotonic, *args, **kwargs)  # type: ignore[arg-type]
        self.window_seconds = window_seconds
        self.decline = decline
        self.starts_asked = 0
        self.streams: dict[str, FakeNativeStream] = {}
        self.stream_calls: list[StreamCall] = []
        self._kind_stamps: dict[tuple[str, str], deque[float]] = {}

    async def start_stream(
        self, place: Place, text: str, *, origin: Event | None = None, recipient: User | None = None
    ) -> FakeNativeStream | None:
        self.starts_asked += 1
        if self.decline:
            return None
        now = self._spend_kind(place, "stream_start")
        ref = MessageRef(place, f"m{next(self._ids)}")
        self.messages[ref.message_id] = Posted(ref, text, origin, [text])
        stream = FakeNativeStream(self, ref, now)
        self.streams[ref.message_id] = stream
        self._log(stream, StreamCall(now, "stream_start", ref.message_id, text))
        return stream

    def stream_write(
        self,
        stream: FakeNativeStream,
        kind: WriteKind,
        text: str,
    ) -> None:
        assert not stream.stopped, "the stream was already stopped"
        if self.monotonic() - stream.started > self.window_seconds:
            raise StreamExpired("message_not_in_streaming_state")
        now = self._spend_kind(stream.ref.place, kind)
        posted = self.messages[stream.ref.message_id]
        posted.text += text
        posted.history.append(posted.text)
        assert len(posted.text) <= self.profile.max_text, f"{len(posted.text)} characters"
        self._log(stream, StreamCall(now, kind, stream.ref.message_id, text))

    def _spend_kind(self, place: Place, kind: WriteKind) -> float:
        own = self.profile.writes_per_minute_per_workspace.get(kind)
        if own is None:
            return self._spend(place, None)
        now = self.monotonic()
        stamps = self._kind_stamps.setdefault((place.workspace_id, kind), deque())
        wait = self._room(stamps, own, 60.0, now)
        if wait > 0:
            self._refuse(wait)
        channel = self._channel_stamps.setdefault(place.channel_id, deque())
        profile = self.profile
        wait = self._room(
            channel, profile.edits_per_window_per_channel, profile.edit_window_seconds, now
        )
        if wait > 0:
            self._refuse(wait)
        stamps.append(now)
        channel.append(now)
        return now

    def _log(self, stream: FakeNativeStream, call: StreamCall) -> None:
        stream.calls.append(call)
        self.stream_calls.append(call)
        posted = self.messages[call.message_id]
        self._record(Write(call.at, call.kind, call.message_id, "", posted.text, True))
