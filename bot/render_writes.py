"""How the stream renderer's writes reach a surface: posts and edits, or natively streamed
messages where the surface streams them itself (see :class:`~bot.kernel.surface.NativeStream`).

The renderer decides what each message should show; :class:`MessageWriter` knows how each
message is written. A natively streamed message only ever grows: it gets the new text, and is
stopped once when it is complete. A surface that declines to stream (``start_stream`` answers
``None``) is not asked again for this answer: the message is posted and edited instead. A
stream the platform ended (:class:`~bot.kernel.surface.StreamExpired`), or one that would have to
take text back, is finished with an edit of the same message.
"""

from __future__ import annotations

import logging

from bot.kernel import (
    Event,
    MessageRef,
    NativeStream,
    OutMessage,
    Place,
    StreamExpired,
    StreamsNatively,
    Surface,
    User,
    WriteKind,
)

log = logging.getLogger(__name__)


class MessageWriter:
    """Writes one answer's messages (by index) on ``surface``; ``native`` allows streaming
    (for ``recipient``, the user being answered)."""

    def __init__(
        self, surface: Surface, origin: Event | None, recipient: User | None, *, native: bool
    ) -> None:
        self.surface = surface
        self.origin = origin
        self.recipient = recipient
        self._native = surface if native and isinstance(surface, StreamsNatively) else None
        self._streams: list[NativeStream | None] = []

    def is_native(self, index: int) -> bool:
        """Whether message ``index`` is (or, not posted yet, would be) streamed natively."""
        if index < len(self._streams):
            return self._streams[index] is not None
        return self._native is not None

    def next_write(self, index: int, shown: str, text: str, *, final: bool) -> WriteKind | None:
        """The write that brings posted message ``index`` from ``shown`` to ``text``
        (``final``: the message is complete), or ``None`` when it is up to date."""
        if self._streams[index] is not None:
            if final:
                return "stream_stop"
            return "stream_append" if shown != text else None
        return "edit" if shown != text else None

    def post_kind(self, *, continued: bool, final: bool) -> WriteKind:
        """The write that posts the next message: a continuation whose text is already
        complete is posted whole (one call instead of starting and stopping a stream)."""
        if self._native is None or (continued and final):
            return "send"
        return "stream_start"

    async def post(
        self, kind: WriteKind, place: Place, text: str, *, first: bool
    ) -> MessageRef | None:
        """Post the next message (the answer's ``first``, or a continuation); ``None`` when the
        surface declined to stream it and nothing was posted."""
        if kind == "stream_start" and self._native is not None:
            stream = await self._native.start_stream(
                place, text, origin=self.origin, recipient=self.recipient
            )
            if stream is None:
                self._native = None
                return None
            self._streams.append(stream)
            return stream.ref
        message = OutMessage(text=text, from_model=True)
        ref = await self.surface.send(place, message, origin=self.origin if first else None)
        self._streams.append(None)
        return ref

    async def update(
        self, kind: WriteKind, ref: MessageRef, index: int, shown: str, text: str
    ) -> bool:
        """Bring message ``index`` from ``shown`` to ``text``; False when it still shows
        ``shown`` (its stream was ended, and the next write is an edit)."""
        stream = self._streams[index]
        if stream is None:
            await self.surface.edit(ref, OutMessage(text=text, from_model=True))
            return True
        grows = text.startswith(shown)
        try:
            if not grows:
                await stream.stop()
            elif kind == "stream_stop":
                await stream.stop(text[len(shown) :])
            else:
                await stream.append(text[len(shown) :])
                return True
        except StreamExpired as expired:
            log.info("the platform ended the stream of %s (%s)", ref.message_id, expired)
            grows = False
        self._streams[index] = None
        return grows
