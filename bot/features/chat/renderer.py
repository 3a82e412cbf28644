"""The stream renderer: a model's streamed answer → messages posted and edited on a surface.

It posts the first message once visible text arrives (or a placeholder when asked; a typing
indicator until then), then edits it as text streams in, under the shared
:class:`~bot.outbox.Pacer` and the surface's per-message minimum interval. Every write tells the
pacer what it would show (a :class:`~bot.outbox.Demand`: unshown characters, how long the oldest
has waited, whether it is the first message), so concurrent streams in a channel are served
stalest first, evenly paced; a lone stream posts at once. Each write is counted in the pacer's
windows until the platform call returns (from its grant, where the platform does not enforce
its windows). Edits are coalesced: every write carries the newest
text, so nothing stale is ever queued. Text beyond ``profile.max_text`` continues in new
messages (split by :func:`bot.kernel.text.split_chunks`, code blocks closed and reopened);
finished messages get their final text, only the last one is live and carries the in-progress
marker. At the end the exact final text lands (waiting for room,
up to ``final_timeout`` seconds), with a note when the answer was cut by ``max_tokens`` or the
stream broke. ``RateLimited`` from the surface holds the channel for its retry-after, then the
write is retried with the newest text.

The displayed text is the streamed text without trailing whitespace (platforms drop it anyway),
followed by a blank line and the note, if any.

Where the surface streams messages itself (its optional ``start_stream``, see
:class:`~bot.kernel.surface.NativeStream`), each message is started with its first text, given only
the new text as it arrives, and stopped when it is complete; it carries no marker, and a split never
takes back text a message already shows. When the surface declines (``start_stream`` answers
``None``), it is not asked again for this answer: the renderer posts and edits instead; a message
whose stream the platform ended (:class:`~bot.kernel.surface.StreamExpired`), or one that would have
to take text back, is finished with an edit. Each kind of write asks the pacer for its own kind
(:data:`~bot.kernel.surface.WriteKind`).

Every write goes through the :class:`~bot.outbox.Outbox` under a :class:`~bot.outbox.Stream`
policy: the renderer keeps its :class:`~bot.outbox.StreamDemand` current (what its next write would
show), which the pacer reads to rank it, waits for a :meth:`~bot.outbox.Outbox.room`, and only then
names the write the newest text needs (none when the kind of write planned is no longer the one
needed: the room is given back). The renderer decides what to write and when it is worth writing;
the outbox decides when it may.

The answer (:class:`~bot.api.TextDeltas`) is read just before each write, never while a write
waits. Once everything read is shown, the renderer waits for more to arrive without reading it,
then for its window (the message's edit interval, then the pacer), and only then reads all that
arrived and names the write. So the demand a waiting write is ranked by counts the text read:
its oldest unshown text has waited since the renderer was woken, its characters count once read.
The text before the first message is the exception: it is read as it arrives, also while the
first message waits for its window, so that the first words go at once and a first message is
ranked by all it will show. The end of the answer ends a write's wait (the source's ``ended``):
the rest is read and the final text waits again, ranked as final.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import cast

from bot.api import STOPPED
from bot.api import StreamEnd as StreamEnd
from bot.api import TextDeltas as TextDeltas
from bot.kernel import (
    FENCE,
    N_,
    ButtonRows,
    Chunk,
    Event,
    MessageRef,
    NativeStream,
    OutMessage,
    Place,
    RateLimited,
    StreamExpired,
    StreamsNatively,
    User,
    WriteKind,
    _,
    cut_chunk,
    metrics,
    split_chunks,
)
from bot.outbox import (
    Clock,
    Demand,
    Edit,
    Operation,
    Outbox,
    PacingTimeout,
    Post,
    Room,
    Stream,
    StreamAppend,
    StreamDemand,
    StreamStart,
    StreamStop,
    Typing,
    WritePolicy,
    WriteSkipped,
)

log = logging.getLogger(__name__)

MARKER = " ▌"
LENGTH_NOTE = N_("_(reply cut at the max_tokens limit)_")
INTERRUPTED_NOTE = N_("_(the provider's stream was interrupted; this reply is incomplete)_")
EMPTY_NOTE = N_("_(the model sent an empty reply)_")
# Translators: under an answer the user stopped while it was written.
STOPPED_NOTE = N_("_(stopped)_")
TYPING_EVERY_SECONDS = 8.0
MAX_RATE_LIMITS_IN_A_ROW = 10


@dataclass
class RenderResult:
    """What a rendering did. ``text`` is the final displayed text (note included); the bodies
    of ``chunks`` (one per message, in order) concatenate to it. ``reply`` is the streamed text
    exactly. ``landed`` is false when the final text could not be written in time."""

    messages: list[MessageRef] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    text: str = ""
    reply: str = ""
    finish_reason: str | None = None
    interrupted: bool = False
    error: BaseException | None = None
    sends: int = 0
    edits: int = 0
    rate_limited: int = 0
    landed: bool = False
    streamed: int = 0
    """How many of the messages the platform streamed itself (started natively)."""

    @property
    def stopped(self) -> bool:
        """Whether the answer was stopped by its reader before the model finished."""
        return self.finish_reason == STOPPED


@dataclass(frozen=True)
class _Op:
    index: int
    kind: WriteKind
    upto: int
    """How much of the reply (raw length) is shown once this write lands."""
    end: int
    """Where the text this write shows ends in the displayed text."""

    @property
    def send(self) -> bool:
        return self.kind in ("send", "stream_start")


class StreamRenderer:
    """Renders one streamed answer; create one per answer and call :meth:`render` once.

    ``interrupt_errors`` are the exceptions from the delta stream that mean "the stream broke"
    (the reply is marked incomplete and returned); others propagate. ``on_posted`` is awaited
    with each new message right after it is posted, before anything else is written (callers
    link it to what makes it recoverable), then ``on_shown`` after every write with the part of
    the reply the messages show (callers store it); their errors propagate. ``recipient`` is
    the user being answered (a natively streamed message is addressed to them). The message
    that shows the end of the answer carries ``live_buttons`` while it streams (⏹ Stop) and
    ``final_buttons`` once the answer is complete (posted and edited messages; a natively
    streamed one carries none).
    """

    def __init__(
        self,
        outbox: Outbox,
        place: Place,
        *,
        origin: Event | None = None,
        placeholder: str | None = None,
        clock: Clock | None = None,
        final_timeout: float = 60.0,
        marker: str = MARKER,
        interrupt_errors: tuple[type[Exception], ...] = (Exception,),
        on_posted: Callable[[MessageRef], Awaitable[None]] | None = None,
        on_shown: Callable[[str], Awaitable[None]] | None = None,
        recipient: User | None = None,
        live_buttons: ButtonRows = (),
        final_buttons: ButtonRows = (),
    ) -> None:
        self.live_buttons = live_buttons
        self.final_buttons = final_buttons
        self.outbox = outbox
        self.profile = outbox.profile(place.platform)
        self.place = place
        self.origin = origin
        self.recipient = recipient
        self.placeholder = placeholder
        self.clock = clock or outbox.pacer.clock
        self.final_timeout = final_timeout
        self.marker = marker
        self.interrupt_errors = interrupt_errors
        self.on_posted = on_posted
        self.on_shown = on_shown
        self.result = RenderResult()
        self._deltas: TextDeltas
        self._unread_since: float | None = None
        """When what arrived and is not read yet began to arrive (as far as is known)."""
        self._failure: Exception | None = None
        self._done = False
        self._deadline = math.inf
        self._shown: list[str] = []
        self._last_write: list[float] = []
        self._last_served = -math.inf
        self._committed: list[Chunk] = []
        self._committed_end = 0
        self._started = self.clock.monotonic()
        self._done_at = math.inf
        self._arrived_ends: list[int] = []
        self._arrived_at: list[float] = []
        self._shown_upto = 0
        self._shown_end = 0
        native = placeholder is None and outbox.can(place.platform, StreamsNatively)
        self._native = native
        """Whether the next message is started as a native stream (until the surface declines)."""
        self._streams: list[NativeStream | None] = []
        self._demand = StreamDemand(self._demand_now())
        self._composed: tuple[_Op, str, Operation[object]] | None = None

    async def render(self, deltas: TextDeltas) -> RenderResult:
        """Read ``deltas`` (just before each write, see the module docstring) and keep the
        surface up to date; returns when the final text is written (or could not be in time).
        Surface errors other than rate limits propagate, and so do errors reading ``deltas``
        other than ``interrupt_errors``, once the text read before them is written."""
        self._deltas = deltas
        typing = asyncio.create_task(self._keep_typing()) if self.placeholder is None else None
        metrics.CHAT_STREAMS_ACTIVE.inc()
        try:
            await self._write_all(typing)
        finally:
            metrics.CHAT_STREAMS_ACTIVE.dec()
            if typing is not None and not typing.done():
                typing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await typing
        if self._failure is not None:
            raise self._failure
        return self.result

    async def _wait(self) -> _Op | None:
        """Wait until more of the answer arrives (there is nothing to write until then),
        without reading it; the write that will show it once there is room (``None`` before
        the first message: the text is read at once)."""
        await self._deltas.wait()
        if not self.result.messages:
            self._read_nowait()
            return None
        self._unread_since = self.clock.monotonic()
        self._demand.current = self._demand_now()
        index = len(self.result.messages) - 1
        kind: WriteKind = "edit" if self._streams[index] is None else "stream_append"
        return _Op(index, kind, self._shown_upto, self._shown_end)

    def _read_nowait(self) -> None:
        """Read what arrived, without waiting (once everything has arrived, nothing more
        means the answer is over)."""
        if self._done:
            return
        ended = self._deltas.ended.is_set()
        try:
            arrived = self._deltas.read_nowait()
        except Exception as error:
            self._broken(error)
            return
        self._take(arrived, over=ended and not arrived)

    def _take(self, arrived: list[str | StreamEnd], *, over: bool) -> None:
        """Keep what was read; it arrived when the renderer was woken, as far as it knows."""
        now = self.clock.monotonic()
        since = now if self._unread_since is None else self._unread_since
        self._unread_since = None
        for item in arrived:
            if isinstance(item, StreamEnd):
                self.result.finish_reason = item.finish_reason
                over = True
            elif item:
                self.result.reply += item
                self._arrived_ends.append(len(self.result.reply))
                self._arrived_at.append(since)
        if over:
            self._end(now)
        else:
            self._demand.current = self._demand_now()

    def _broken(self, error: Exception) -> None:
        """Reading ``error`` ended the answer: an interruption is marked in the final text,
        another error is raised once the text read before it landed."""
        if isinstance(error, self.interrupt_errors):
            self.result.interrupted = True
            self.result.error = error
        else:
            self._failure = error
        self._end(self.clock.monotonic())

    def _end(self, now: float) -> None:
        """The answer is complete (or broke): what is left is its final text."""
        self._done = True
        self._done_at = now
        self._deadline = now + self.final_timeout
        self._demand.current = self._demand_now()

    async def _keep_typing(self) -> None:
        while not self.result.messages:
            await self.outbox.write(self.place, Typing(), WritePolicy.BEST_EFFORT)
            await self.clock.sleep(TYPING_EVERY_SECONDS)

    def _source(self) -> str:
        text = self.result.reply.rstrip()
        if not self._done:
            return text
        note = ""
        if self.result.interrupted:
            note = INTERRUPTED_NOTE
        elif self.result.stopped:
            note = STOPPED_NOTE
        elif self.result.finish_reason == "length":
            note = LENGTH_NOTE
        elif not text:
            note = EMPTY_NOTE
        note = _(note) if note else ""
        return f"{text}\n\n{note}" if text and note else text or note

    def _desired(self) -> list[str]:
        source = self._source()
        if not source:
            return [self.placeholder] if self.placeholder is not None else []
        limit = self.profile.max_text
        live_index = len(self._committed)
        native = self._is_native(live_index)
        marker = 0 if native else len(self.marker)
        reserve = 0 if self._done else len(FENCE) + 1 + marker
        posted = live_index < len(self.result.messages)
        chunks = split_chunks(source, limit, reserve=reserve, start=self._committed_end)
        if native and posted and len(chunks) > 1 and chunks[0].end < self._shown_end:
            shown = cut_chunk(source, limit, start=self._committed_end, keep=self._shown_end)
            self._committed.append(shown)
            self._committed_end = shown.end
            chunks = split_chunks(source, limit, reserve=reserve, start=self._committed_end)
        for chunk in chunks[:-1]:
            self._committed.append(chunk)
            self._committed_end = chunk.end
        last = chunks[-1]
        live = last.text
        if not self._done and not self._is_native(len(self._committed)):
            live += self.marker + ("\n" + FENCE if last.ends_in_fence else "")
        self.result.chunks = [*self._committed, last]
        return [chunk.text for chunk in self._committed] + [live]

    def _next_op(self) -> tuple[_Op, str] | None:
        desired = self._desired()
        for index, text in enumerate(desired):
            last = index == len(desired) - 1
            chunks = self.result.chunks
            end = chunks[index].end if index < len(chunks) else 0
            upto = len(self.result.reply) if last else end
            final = self._done or not last
            if index >= len(self.result.messages):
                post = self._post_kind(continued=index > 0, final=final)
                return _Op(index, post, upto, end), text
            write = self._next_write(index, self._shown[index], text, final=final)
            if write is not None:
                return _Op(index, write, upto, end), text
        return None

    def _is_native(self, index: int) -> bool:
        """Whether message ``index`` is (or, not posted yet, would be) streamed natively."""
        if index < len(self._streams):
            return self._streams[index] is not None
        return self._native

    def _next_write(self, index: int, shown: str, text: str, *, final: bool) -> WriteKind | None:
        """The write that brings posted message ``index`` from ``shown`` to ``text``
        (``final``: the message is complete), or ``None`` when it is up to date."""
        if self._streams[index] is not None:
            if final:
                return "stream_stop"
            return "stream_append" if shown != text else None
        return "edit" if shown != text else None

    def _post_kind(self, *, continued: bool, final: bool) -> WriteKind:
        """The write that posts the next message: a continuation whose text is already
        complete is posted whole (one call instead of starting and stopping a stream)."""
        if not self._native or (continued and final):
            return "send"
        return "stream_start"

    def _demand_now(self) -> Demand:
        """What the next write would show (see :class:`~bot.outbox.Demand`); kept in
        :attr:`_demand` as it changes (a delta arrived, the stream ended, a write landed)."""
        oldest = bisect.bisect_right(self._arrived_ends, self._shown_upto)
        since: float | None = None
        if not self.result.messages and self.placeholder is not None:
            since = self._started
        elif oldest < len(self._arrived_at):
            since = self._arrived_at[oldest]
        for moment in (self._unread_since, self._done_at if self._done else None):
            if moment is not None:
                since = moment if since is None else min(since, moment)
        return Demand(
            unseen=max(len(self.result.reply.rstrip()) - self._shown_upto, 0),
            since=since,
            first=not self.result.messages,
            final=self._done,
        )

    async def _write_all(self, typing: asyncio.Task[None] | None) -> None:
        """Write until the final text is shown, or give up."""
        rate_limits_in_a_row = 0
        while True:
            planned = self._next_op()
            if planned is not None:
                op = planned[0]
            elif self._done:
                self.result.text = self._source()
                self.result.landed = True
                return
            elif (coming := await self._wait()) is not None:
                op = coming
            else:
                continue
            try:
                await self._edit_interval(op)
                room = await self._room(op)
                try:
                    self._read_nowait()
                    operation = self._compose(op.kind)
                except BaseException:
                    room.give_back()
                    raise
                answer = await room.write(operation)
                rate_limits_in_a_row = 0
                await self._written(answer)
            except PacingTimeout:
                log.warning("gave up landing the final text in %s", self.place)
                self.result.text = self._source()
                return
            except WriteSkipped:
                self._read_nowait()
                continue
            except StreamExpired as expired:
                if self._composed is None or not isinstance(
                    self._composed[2], StreamAppend | StreamStop
                ):
                    raise
                rate_limits_in_a_row = 0
                index = self._composed[0].index
                log.info(
                    "the platform ended the stream of %s (%s)",
                    self.result.messages[index].message_id,
                    expired,
                )
                self._streams[index] = None
            except RateLimited:
                self.result.rate_limited += 1
                rate_limits_in_a_row += 1
                if rate_limits_in_a_row >= MAX_RATE_LIMITS_IN_A_ROW:
                    log.warning(
                        "rate limited %d times in a row in %s", rate_limits_in_a_row, self.place
                    )
                    self.result.text = self._source()
                    return
            if typing is not None and self.result.messages and not typing.done():
                typing.cancel()

    async def _room(self, op: _Op) -> Room:
        """Room for ``op``. The first message's text is read as it comes while it waits, so
        that it is ranked by what it will show; later writes read only once they have room."""
        asking = asyncio.ensure_future(self.outbox.room(self._place_of(op), self._policy(op.kind)))
        arriving: asyncio.Future[None] | None = None
        try:
            while not (self.result.messages or self._done or asking.done()):
                arriving = asyncio.ensure_future(self._deltas.wait())
                await asyncio.wait((asking, arriving), return_when=asyncio.FIRST_COMPLETED)
                if arriving.done():
                    self._read_nowait()
            return await asking
        except BaseException:
            if asking.done() and not asking.cancelled() and asking.exception() is None:
                asking.result().give_back()
            raise
        finally:
            for task in (asking, arriving):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    async def _edit_interval(self, op: _Op) -> None:
        """Wait until message ``op.index`` may be edited again (the platform's minimum
        interval); :class:`PacingTimeout` when not before the final text's deadline."""
        if op.kind != "edit":
            return
        profile = self.profile
        ready = self._last_write[op.index] + profile.min_seconds_between_edits_of_one_message
        while (now := self.clock.monotonic()) < ready:
            if ready > self._deadline:
                raise PacingTimeout("the message cannot be edited again before the deadline")
            await self.clock.sleep(ready - now)

    def _policy(self, kind: WriteKind) -> Stream:
        """While streaming, a write waits for room until everything has arrived (then the
        rest is read and the final text waits again, bounded by the deadline)."""
        if self._done:
            return Stream(self._demand, kind, self._last_served, deadline=self._deadline)
        return Stream(self._demand, kind, self._last_served, until=self._deltas.ended)

    def _place_of(self, op: _Op) -> Place:
        """Where ``op`` writes: a new message goes where the answer's first went."""
        if op.send:
            return self.result.messages[0].place if self.result.messages else self.place
        return self.result.messages[op.index].place

    def _compose(self, kind: WriteKind) -> Operation[object] | None:
        """The write the newest text needs, when it is still of the ``kind`` there is room for
        (else ``None``: nothing is written and the renderer plans again)."""
        self._composed = None
        current = self._next_op()
        if current is None or current[0].kind != kind:
            return None
        op, text = current
        operation: Operation[object]
        if op.send:
            if op.kind == "stream_start":
                operation = StreamStart(text, self.origin, self.recipient)
            else:
                first = self.origin if op.index == 0 else None
                operation = Post(self._message(op.index, text), first)
        else:
            ref = self.result.messages[op.index]
            stream = self._streams[op.index]
            shown = self._shown[op.index]
            if stream is None:
                operation = Edit(ref, self._message(op.index, text))
            elif not text.startswith(shown):
                operation = StreamStop(stream)
            elif op.kind == "stream_stop":
                operation = StreamStop(stream, text[len(shown) :], self._buttons(op.index))
            else:
                operation = StreamAppend(stream, text[len(shown) :])
        self._composed = (op, text, operation)
        return operation

    def _message(self, index: int, text: str) -> OutMessage:
        """Message ``index`` showing ``text``, with its buttons."""
        return OutMessage(text=text, buttons=self._buttons(index), from_model=True)

    def _buttons(self, index: int) -> ButtonRows:
        """The buttons of message ``index``: the last one shown carries the controls."""
        if index != len(self.result.chunks) - 1:
            return ()
        return self.final_buttons if self._done else self.live_buttons

    async def _written(self, answer: object) -> None:
        """Record the write :meth:`_compose` named, which the outbox made (``answer``: what the
        platform answered)."""
        assert self._composed is not None
        op, text, operation = self._composed
        if op.send:
            if isinstance(operation, StreamStart):
                if answer is None:
                    self._native = False
                    return
                stream = cast(NativeStream, answer)
                self._streams.append(stream)
                ref = stream.ref
            else:
                ref = cast(MessageRef, answer)
                self._streams.append(None)
            self.result.messages.append(ref)
            self._shown.append(text)
            self._last_write.append(self.clock.monotonic())
            self.result.sends += 1
            self.result.streamed += op.kind == "stream_start"
        else:
            if isinstance(operation, StreamStop):
                self._streams[op.index] = None
                if not text.startswith(self._shown[op.index]):
                    return
            self._shown[op.index] = text
            self._last_write[op.index] = self.clock.monotonic()
            self.result.edits += 1
        oldest = bisect.bisect_right(self._arrived_ends, self._shown_upto)
        if op.upto > self._shown_upto and oldest < len(self._arrived_at):
            waited = self.clock.monotonic() - self._arrived_at[oldest]
            metrics.CHAT_STREAM_STALENESS.labels(self.place.platform).observe(max(waited, 0.0))
        self._shown_upto = max(self._shown_upto, op.upto)
        self._shown_end = max(self._shown_end, op.end)
        self._last_served = self.clock.monotonic()
        self._demand.current = self._demand_now()
        if op.send and self.on_posted is not None:
            await self.on_posted(self.result.messages[-1])
        if self.on_shown is not None:
            await self.on_shown(self.result.reply[: self._shown_upto])
