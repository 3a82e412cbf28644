"""The outbox's pacer: write windows for message sends and edits, shared by every write of a
process.

A :class:`Pacer` keeps, per channel ``(platform, workspace, channel)``, a log of the
writes it granted — at most ``profile.edits_per_window_per_channel`` in any
``profile.edit_window_seconds`` — and, when ``profile.edits_per_minute_per_workspace`` is set,
the same per workspace over 60 s. Threads share their parent channel's window. A kind of write
(:data:`~bot.kernel.surface.WriteKind`) listed in ``profile.writes_per_minute_per_workspace`` has
its own workspace window instead (Slack limits every method on its own); only the kinds in
``profile.channel_window_kinds`` (all when it is ``None``) and writes of no kind (the outbox's
posts and edits) count against the channel's window.
Starting and stopping a natively streamed message happen once per message, so their workspace
windows are not paced (pacing would only delay first words and final texts).

Accounting. A platform counts a write when the request arrives, somewhere between genbot's grant
and the call's return; on a busy event loop that gap is unbounded. A write granted with
``hold=True`` is therefore counted as in flight (it cannot leave the window) until
:meth:`Pacer.finish` is called after the platform call returns, and from then on it stays in the
window for ``window + margin`` seconds: the conservative end, whatever the delays. A plain
:meth:`Pacer.acquire` (without ``hold``) takes the write as finished
``UNHELD_ALLOWANCE`` seconds after its grant — right for callers that write at once on an idle
event loop, not beyond. A platform that does not enforce its windows
(``profile.enforces_windows`` false: the playground, whose window is advertised) counts no
write itself, so there a write counts from its grant for exactly a window, without the margin,
held or not (a held one can still be given back). In the windows other processes share, such a
write counts from the moment its reservation counted it. :meth:`Pacer.run` makes a write's
platform call itself, in one step: the room, the call (counted), the finish, and on a "rate
limited, retry after N s" the channel held for N s (:meth:`Pacer.penalize`).

Scheduling. Non-urgent writes are paced: at most one per ``window / capacity`` seconds
in a channel (and in a workspace), so the window is spent evenly and never in a burst that leaves
every stream frozen until it refills. Urgent writes (genbot's own posts: job messages, notes,
questions) are not paced and go first. Waiting stream writes (those that describe their
:class:`~bot.outbox.windows.Demand`) are served stalest first (:func:`rank`): writing a
finished stream's final text ends its lag for good, whereas a live stream served a moment later
shows that much more. When others wait in the channel, a
stream's first message is held until its text is ``FIRST_MESSAGE_HOLD`` old; a stream's final
text is not paced when nobody else waits in its channel. Other non-urgent writes come last,
least recently served first. A write may leave a share of its windows free for others
(``spare``: progress edits leave a quarter, room for that many results or answers at once — one
in a window of 5, none below 4); it waits while fewer are free, here and in the shared windows,
where it is booked ahead only for its spacing, never for room (a booked row counts from its
reservation: booked for room, it would take the spare at once). Only shared limits live here; the
per-message minimum interval is the renderer's.

Across processes. With ``shared`` (the storage's :class:`~storage.WriteWindows`, on PostgreSQL) a
write this process is about to grant is also counted in the database, in the windows it counts
against here (its channel's unless its kind does not count there; its workspace window, when it has
one) and spaced in the first of them as it is paced here, and waits when other processes filled
them: N processes writing into one channel together stay within the platform's limits. This
process's scheduling (who goes first, pacing) is unchanged; the database only says when. A held
write's finish is told there too, so it counts there, as here, from its call's return (from its
grant, where the platform does not enforce its windows). A write that
waits for its turn there (its spacing after another process's write, or room) is booked for it
(counted for that moment, at most its channel's window ahead; one counted past its deadline is
given back at once) and made then without asking again (asked again if this process's own order
holds it more than ``BOOKED_GRACE`` past its booking, timed from when the reservation returned: a
slow database neither lapses it on arrival nor lets it go before the moment booked). A booking not
used (its write cancelled or out of time, or held past its booking here: another write went first,
the channel was penalised) is given back: it stops counting there with this process's next
reservation, which the give-back asks for, alone when nothing else asks
(:meth:`~storage.WriteWindows.given_back`). A booking moves its channel's last write there to
its moment, so a write that becomes next here before it (a stream's edit arriving while a
progress edit is booked) is spaced after the booking there and goes up to a spacing later, as
between two streams' edits. Urgent writes waiting in a channel whose window here has room for
all of them ask for their turns there together (one transaction for many,
:class:`~storage.queries.grouped.Grouped`), not each after the one before it was granted, and each
goes once counted there; they are counted at once or not at all (never booked ahead). When the
shared windows turn them away (the channel is full there), the channel's writes go back to one at a
time until the time they said and for a window after it (:data:`ALONE_WINDOWS`): asked together
again then, in a channel other processes keep writing into, they were turned away again at nearly
every answer (about five asks a result in three processes' burst; about 1.6 with the window,
measured). A turn-away need not come from other processes: this process's own writes count there
too, its paced bookings from their reservation (here only from their grant), and rows left by its
writes before a restart. A window of one at a time costs a write a reservation of its own, made
once the one before it was granted: k urgent writes take about k reservations (the gather and a
transaction each) one after another, not one. The reservations this process asks for while one is
under way go together in one transaction, judged there in :func:`rank` order (a result before a
stream's edit before a progress edit, whichever asked first): where the shared windows have room
for only some of them, the writes that go first here get it."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from bot.kernel import Place, PlatformProfile, RateLimited, WriteKind, metrics
from bot.outbox.windows import (
    SHARED,
    ChannelKey,
    ChannelState,
    Grant,
    Stamp,
    StreamDemand,
    Ticket,
    Window,
    WorkspaceKey,
)
from storage import StorageError, WriteBooking, WriteWindow, WriteWindows

log = logging.getLogger(__name__)

T = TypeVar("T")

WORKSPACE_WINDOW_SECONDS = 60.0
SWEEP_EVERY_GRANTS = 512
FIRST_MESSAGE_HOLD = 0.4
"""Seconds a stream's first text waits before its first message when other writes wait in the
channel, so that write carries a few words rather than one (a lone stream posts at once)."""
DEFAULT_MARGIN = 0.02
"""Seconds added to every window and retry-after of a platform that enforces its windows: clock
granularity, not network delay (writes are counted until their call returns)."""
BOOKED_GRACE = 0.25
"""How late a write booked in the shared windows may still be made on its booking (its slot
counts half a second past its window); later, it is asked for again."""
BOOK_AHEAD = 0.05
"""Seconds before its room here opens that the next write of a channel asks for its turn in
the shared windows, so that it goes as the room opens rather than a reservation later."""
ALONE_WINDOWS = 1
"""Windows (the channel's length and the margin) that a channel's writes ask for their shared
turns one at a time after the shared windows turned away writes asking together there (full of
other processes' writes or of this process's own: see the module docstring), each with a
reservation of its own once the one before it was granted."""
UNHELD_ALLOWANCE = 0.1
"""A write granted without ``hold`` is taken as finished this long after its grant (at it, where
the platform does not enforce its windows)."""
_MIN_SLEEP = 1e-6
_RECHECK_SECONDS = 0.25

UNSHARED = WriteBooking(0.0, True)
"""A write counted at once, without a slot: no shared windows, or they failed."""

UNPACED_KINDS: frozenset[WriteKind] = frozenset({"stream_start", "stream_stop"})
"""Writes made once per message: their workspace window is not paced."""
CHARS_PER_STALE_SECOND = 800.0
"""How many unshown characters weigh as much as one second of waiting, when ranking streams."""
FIRST_MESSAGE_BONUS = 0.5
"""Seconds added to the staleness of a stream that has no message yet."""
FINAL_TEXT_BONUS = 0.5
"""Seconds added to the staleness of a finished stream (its unshown characters also count twice)."""
IN_FLIGHT_LIMIT = 60.0
"""A held write never finished is taken as finished this long after its grant."""


def rank(ticket: Ticket, now: float) -> tuple[int, float, float]:
    """Lower goes first: urgent writes, then streams stalest first (seconds the oldest unshown
    text has waited + unshown characters / ``CHARS_PER_STALE_SECOND``, plus
    ``FIRST_MESSAGE_BONUS`` for a stream without a message; a finished stream's unshown
    characters weigh double and it gets ``FINAL_TEXT_BONUS``), then the rest, least recently
    served first. Only a stream's rank moves with ``now`` and its text."""
    if ticket.urgent:
        return (0, ticket.last_served, ticket.sequence)
    if ticket.demand is not None:
        demand = ticket.demand.current
        staleness = _waited(demand.since, now) + demand.unseen / CHARS_PER_STALE_SECOND
        if demand.first:
            staleness += FIRST_MESSAGE_BONUS
        if demand.final:
            staleness += FINAL_TEXT_BONUS + demand.unseen / CHARS_PER_STALE_SECOND
        return (1, -staleness, ticket.sequence)
    return (2, ticket.last_served, ticket.sequence)


def _waited(since: float | None, now: float) -> float:
    """Seconds a demand's oldest unshown text has waited at ``now`` (``None``: none has)."""
    return 0.0 if since is None else now - since


def _final(ticket: Ticket) -> bool:
    """Whether ``ticket`` writes a finished stream's final text."""
    return ticket.demand is not None and ticket.demand.current.final


class Timer(Protocol):
    """A call :meth:`Clock.later` will make, unless cancelled first."""

    def cancel(self) -> object:
        """Do not make the call (a no-op once it was made)."""


@dataclass(frozen=True)
class Clock:
    """Time as the renderer sees it: a monotonic reading, a sleep and a timer. Tests inject
    fakes."""

    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    call_later: Callable[[float, Callable[[], None]], Timer] | None = None
    """Call a function that many seconds from now on this clock, without a task of its own;
    ``None``: :meth:`later` derives it from ``sleep``."""

    def later(self, seconds: float, callback: Callable[[], None]) -> Timer:
        """Call ``callback`` ``seconds`` from now on this clock, unless the timer returned is
        cancelled first: with ``call_later``; without it, on the event loop's own timer when
        ``sleep`` is asyncio's (as that sleep does), else from a task that sleeps."""
        if self.call_later is not None:
            return self.call_later(seconds, callback)
        if self.sleep is asyncio.sleep:
            return asyncio.get_running_loop().call_later(seconds, callback)
        return asyncio.ensure_future(_after(self.sleep, seconds, callback))


async def _after(
    sleep: Callable[[float], Awaitable[None]], seconds: float, callback: Callable[[], None]
) -> None:
    await sleep(seconds)
    callback()


def _resolve(woken: asyncio.Future[None]) -> None:
    """Wake the write waiting on ``woken``, unless it was woken or cancelled already."""
    if not woken.done():
        woken.set_result(None)


class PacingTimeout(Exception):
    """A write could not get room in its windows before its deadline."""


class Pacer:
    """The process-wide write windows (one per process, held by the :class:`~bot.outbox.Outbox`).

    ``margin`` seconds are added to every window and retry-after (see ``DEFAULT_MARGIN``) of
    the platforms that enforce their windows.
    """

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        margin: float = DEFAULT_MARGIN,
        shared: WriteWindows | None = None,
    ) -> None:
        self.clock = clock or Clock()
        self.margin = margin
        self._shared = shared
        self._channels: dict[ChannelKey, ChannelState] = {}
        self._workspaces: dict[WorkspaceKey, dict[str, Window]] = {}
        self._waiting: dict[WorkspaceKey, list[Ticket]] = {}
        self._sequence = itertools.count()
        self.granted = 0

    @staticmethod
    def keys(place: Place) -> tuple[ChannelKey, WorkspaceKey]:
        """The channel and workspace keys a place's writes count against."""
        return (
            (place.platform, place.workspace_id, place.channel_id),
            (place.platform, place.workspace_id),
        )

    def _channel(self, key: ChannelKey, profile: PlatformProfile) -> ChannelState:
        channel = self._channels.get(key)
        if channel is None:
            window = _window(
                profile.edits_per_window_per_channel,
                profile.edit_window_seconds,
                self._margin(profile),
            )
            channel = self._channels[key] = ChannelState(window)
        return channel

    @staticmethod
    def _bucket(profile: PlatformProfile, kind: WriteKind | None) -> str:
        """The workspace window a write of ``kind`` counts against."""
        return (
            kind if kind is not None and kind in profile.writes_per_minute_per_workspace else SHARED
        )

    def _workspace(
        self, key: WorkspaceKey, profile: PlatformProfile, bucket: str = SHARED
    ) -> Window | None:
        if bucket == SHARED:
            per_minute = profile.edits_per_minute_per_workspace
        else:
            budgets = profile.writes_per_minute_per_workspace
            per_minute = next((n for kind, n in budgets.items() if kind == bucket), None)
        if per_minute is None:
            return None
        buckets = self._workspaces.setdefault(key, {})
        window = buckets.get(bucket)
        if window is None:
            window = buckets[bucket] = _window(
                per_minute, WORKSPACE_WINDOW_SECONDS, self._margin(profile)
            )
        return window

    def _margin(self, profile: PlatformProfile) -> float:
        """The margin of ``profile``'s windows: none where the platform does not count writes
        itself (a write counts from its grant, on this process's clock only)."""
        return self.margin if profile.enforces_windows else 0.0

    @staticmethod
    def _wake(channel: ChannelState) -> None:
        waiters, channel.waiters = channel.waiters, {}
        for woken in waiters:
            _resolve(woken)

    def _changed_in(self, key: ChannelKey) -> None:
        """Wake the writers waiting in ``key``'s channel and, when its workspace has a window
        too, those waiting elsewhere in the workspace."""
        workspace_key = (key[0], key[1])
        keys = {key}
        if workspace_key in self._workspaces:
            keys |= {ticket.channel for ticket in self._waiting.get(workspace_key, ())}
        for other in keys:
            channel = self._channels.get(other)
            if channel is not None:
                self._wake(channel)

    def _ready_at(self, ticket: Ticket, now: float) -> float:
        """When ``ticket`` could write (a lower bound while writes are in flight). A stream's
        final text is paced only when others wait (in the channel; in the workspace); its first
        message is held while others wait in the channel (see ``FIRST_MESSAGE_HOLD``)."""
        channel = self._channel(ticket.channel, ticket.profile)
        ready = channel.blocked_until
        if ticket.channel_bound:
            paced = self._paced(ticket, channel, in_channel=True)
            spared = _spared(channel.window, ticket)
            ready = max(ready, self._free_at(channel.window, now, paced=paced, ahead=spared))
            ready = max(ready, self._held_until(ticket, channel, now))
        workspace = self._workspace(ticket.workspace, ticket.profile, ticket.bucket)
        if workspace is not None:
            paced = self._paced(ticket, channel, in_channel=False)
            spared = _spared(workspace, ticket)
            ready = max(ready, self._free_at(workspace, now, paced=paced, ahead=spared))
        return ready

    def _paced(self, ticket: Ticket, channel: ChannelState, *, in_channel: bool) -> bool:
        """Whether ``ticket`` is paced in its channel's window (``in_channel``) or in its
        workspace window: a non-urgent write, unless it is a stream's final text and nobody
        else waits for that window or, in the workspace, a write made once per message
        (:data:`UNPACED_KINDS`)."""
        if ticket.urgent:
            return False
        if in_channel:
            return not (_final(ticket) and channel.waiting == [ticket])
        alone = self._sharing(ticket) == [ticket]
        return ticket.kind not in UNPACED_KINDS and not (_final(ticket) and alone)

    def _free_at(self, window: Window, now: float, *, paced: bool = False, ahead: int = 0) -> float:
        """The earliest time a write fits in ``window`` (a lower bound while writes are in
        flight) beside ``ahead`` more granted before it (``math.inf``: not before some of those
        are made); the stamps that left it are dropped. A held write leaves its window
        ``seconds + margin`` after it finished (while in flight, at the earliest that long after
        ``now``; never later than ``IN_FLIGHT_LIMIT`` after its grant). ``paced``: at most one
        grant per ``seconds / capacity``."""
        ends = [_ended(stamp, now) + window.seconds + window.margin for stamp in window.stamps]
        if any(end <= now for end in ends):
            window.stamps = [s for s, end in zip(window.stamps, ends, strict=True) if end > now]
            ends = [end for end in ends if end > now]
        ready = now
        counted = len(ends) + ahead
        if ahead >= window.capacity:
            ready = math.inf
        elif counted >= window.capacity:
            ready = sorted(ends)[counted - window.capacity]
        if paced:
            ready = max(ready, window.last_grant + window.seconds / window.capacity)
        return ready

    @staticmethod
    def _held_until(ticket: Ticket, channel: ChannelState, now: float) -> float:
        """When a stream's first message may go while others wait in its channel."""
        if ticket.demand is None or len(channel.waiting) < 2:
            return -math.inf
        demand = ticket.demand.current
        if not demand.first or not demand.unseen or demand.final:
            return -math.inf
        return now - _waited(demand.since, now) + FIRST_MESSAGE_HOLD

    def _ahead(self, ticket: Ticket, now: float) -> int | None:
        """How many of the writes waiting in ``ticket``'s channel that are not held (see
        ``FIRST_MESSAGE_HOLD``) rank before it; ``None`` while it is held itself. A write that
        does not count against its channel's window has none before it."""
        if not ticket.channel_bound:
            return 0
        channel = self._channels[ticket.channel]
        if not channel.streams:
            if channel.order is None:
                channel.order = sorted(channel.waiting, key=lambda t: rank(t, now))
            return channel.order.index(ticket)
        free = [t for t in channel.waiting if self._held_until(t, channel, now) <= now]
        if ticket not in free:
            return None
        first = rank(ticket, now)
        return sum(rank(t, now) < first for t in free if t is not ticket)

    def _together_at(self, ticket: Ticket, ahead: int, now: float) -> float:
        """When ``ticket``, with ``ahead`` writes of its channel ranked before it, may go beside
        them once counted in the shared windows: once its channel's window here has room for
        them all (it asks there only after
        :attr:`~bot.outbox.windows.ChannelState.together_after` too). Only an urgent write
        (never paced) that counts against no workspace window goes beside others; for the rest,
        for a channel's first, and without shared windows, ``math.inf``."""
        together = ahead > 0 and ticket.urgent and ticket.channel_bound and self._shared is not None
        if not together or self._workspace(ticket.workspace, ticket.profile, ticket.bucket):
            return math.inf
        channel = self._channels[ticket.channel]
        return max(channel.blocked_until, self._free_at(channel.window, now, ahead=ahead))

    def _is_next(self, ticket: Ticket, now: float) -> bool:
        """Whether ``ticket`` is first in its channel and, among the channel-firsts that could
        write now, first in its workspace."""
        if self._ahead(ticket, now) != 0:
            return False
        if self._workspace(ticket.workspace, ticket.profile, ticket.bucket) is None:
            return True
        first = rank(ticket, now)
        return not any(
            other is not ticket
            and other.channel != ticket.channel
            and rank(other, now) < first
            and self._ahead(other, now) == 0
            and self._ready_at(other, now) <= now
            for other in self._sharing(ticket)
        )

    def _sharing(self, ticket: Ticket) -> list[Ticket]:
        """The writes waiting for the same workspace window as ``ticket`` (itself included)."""
        return [t for t in self._waiting.get(ticket.workspace, ()) if t.bucket == ticket.bucket]

    async def _wait_for_change(self, channel: ChannelState, until: float) -> None:
        """Until the channel's state changes (another writer was served), ``until`` (clock
        time), or a little while: waiters' ranks move with time and text, so two of them can
        each see the other first. One future, resolved by the change or by the clock's timer:
        no task, and a cancelled wait leaves neither behind."""
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        channel.waiters[woken] = None
        timeout = min(_RECHECK_SECONDS, max(until - self.clock.monotonic(), _MIN_SLEEP))
        timer = self.clock.later(timeout, functools.partial(_resolve, woken))
        try:
            await woken
        finally:
            timer.cancel()
            channel.waiters.pop(woken, None)

    async def acquire(
        self,
        place: Place,
        profile: PlatformProfile,
        *,
        urgent: bool,
        last_served: float = -math.inf,
        deadline: float | None = None,
        demand: StreamDemand | None = None,
        hold: bool = False,
        kind: WriteKind | None = None,
        spare: float = 0.0,
    ) -> Grant:
        """Wait for room for one write in ``place`` and count it.

        ``urgent`` writes are not paced and go first. ``demand`` (stream writes, kept current
        by their writer) is read at every decision to rank the write among the others;
        ``last_served`` (when the caller last got a write) orders writes without one.
        ``deadline`` (clock time) bounds the wait with :class:`PacingTimeout`: a write that
        would go after it gives up as soon as that is known (a booking counted for later is
        given back), one asked past it is granted only if it fits at once, and one granted on a
        booking it holds goes even when woken late. With ``hold`` the
        grant stays open until :meth:`finish` or :meth:`give_back`, and the write counts as in
        flight until its finish; without it, as finished ``UNHELD_ALLOWANCE`` after the grant
        (where the platform does not enforce its windows, either counts from the grant).
        ``kind`` picks the write's workspace window and whether it counts against the
        channel's (see the module docstring; a write of no kind does). ``spare``: the share of
        each of its windows (rounded down) the write leaves free for others; it waits while
        fewer are free.
        """
        channel_key, workspace_key = self.keys(place)
        ticket = Ticket(
            channel_key,
            workspace_key,
            urgent,
            last_served,
            next(self._sequence),
            profile,
            demand,
            self._bucket(profile, kind),
            kind,
            kind is None
            or profile.channel_window_kinds is None
            or kind in profile.channel_window_kinds,
            spare,
        )
        channel = self._channel(channel_key, profile)
        if ticket.channel_bound:
            channel.waiting.append(ticket)
            channel.streams += ticket.demand is not None
            channel.order = None
        self._waiting.setdefault(workspace_key, []).append(ticket)
        asked = self.clock.monotonic()
        booked: WriteBooking | None = None
        booked_until = -math.inf
        again = False
        try:
            while True:
                now = self.clock.monotonic()
                if deadline is not None and now > deadline and booked is None and again:
                    raise PacingTimeout(f"no room to write in {channel_key} before the deadline")
                again = True
                ready = self._ready_at(ticket, now)
                if booked is not None and max(now, ready) > booked_until:
                    self._unbook(booked.slot)
                    booked = None
                if ready > now:
                    if deadline is not None and ready > deadline:
                        raise PacingTimeout(
                            f"no room to write in {channel_key} before the deadline"
                        )
                    wait = ready - now
                    if self._shared is not None and booked is None:
                        if wait > BOOK_AHEAD:
                            wait -= BOOK_AHEAD
                        elif self._is_next(ticket, now):
                            booking = await self._reserve_shared(ticket, channel, now, deadline)
                            now = self.clock.monotonic()
                            told = now + booking.wait
                            if booking.counted:
                                booked, booked_until = booking, told + BOOKED_GRACE
                            if deadline is not None and told > deadline:
                                raise PacingTimeout(
                                    f"no room to write in {channel_key} before the deadline"
                                )
                            wait = max(ready, told) - now
                    await self.clock.sleep(max(wait, _MIN_SLEEP))
                    continue
                ahead = self._ahead(ticket, now)
                together = math.inf if ahead is None else self._together_at(ticket, ahead, now)
                if booked is not None and (together <= now or self._is_next(ticket, now)):
                    priority = "urgent" if urgent else "paced"
                    waited = max(now - asked, 0.0)
                    metrics.WINDOW_WAIT.labels(place.platform, priority).observe(waited)
                    grant = self._grant(ticket, channel, now, hold, booked)
                    booked = None
                    return grant
                asking = max(together, channel.together_after)
                if booked is None and asking <= now:
                    booking = await self._reserve_shared(ticket, channel, now, None, book=False)
                    told = self.clock.monotonic() + booking.wait
                    if booking.counted:
                        booked, booked_until = booking, told + BOOKED_GRACE
                    elif deadline is not None and told > deadline:
                        raise PacingTimeout(
                            f"no room to write in {channel_key} before the deadline"
                        )
                    else:
                        alone = ALONE_WINDOWS * (channel.window.seconds + channel.window.margin)
                        channel.together_after = max(channel.together_after, told + alone)
                    continue
                if booked is None and self._is_next(ticket, now):
                    booking = await self._reserve_shared(ticket, channel, now, deadline)
                    told = self.clock.monotonic() + booking.wait
                    if booking.counted:
                        booked, booked_until = booking, told + BOOKED_GRACE
                    if booking.wait > 0:
                        if deadline is not None and told > deadline:
                            raise PacingTimeout(
                                f"no room to write in {channel_key} before the deadline"
                            )
                        await self.clock.sleep(booking.wait)
                    continue
                until = asking if booked is None else booked_until
                if deadline is not None:
                    if now > deadline:
                        raise PacingTimeout(
                            f"no room to write in {channel_key} before the deadline"
                        )
                    until = min(until, deadline)
                await self._wait_for_change(channel, until)
        finally:
            if booked is not None:
                self._unbook(booked.slot)
            if ticket.channel_bound:
                channel.waiting.remove(ticket)
                channel.streams -= ticket.demand is not None
                channel.order = None
            self._waiting[workspace_key].remove(ticket)
            if not self._waiting[workspace_key]:
                del self._waiting[workspace_key]
            self._changed_in(channel_key)

    async def run(
        self,
        place: Place,
        profile: PlatformProfile,
        call: Callable[[], Awaitable[T]],
        method: str,
        *,
        urgent: bool,
        deadline: float,
        last_served: float = -math.inf,
        late: bool = False,
        spare: float = 0.0,
    ) -> T:
        """Make ``call``, one platform write in ``place`` (``method``: what it is counted as in
        ``genbot_platform_writes_total``), once there is room for it, and hold the room until
        the call returns. A :class:`~bot.kernel.RateLimited` it raises holds the channel for the
        retry-after (:meth:`penalize`), is counted, and propagates. No room before ``deadline``
        (clock time): :class:`PacingTimeout` and no call, or with ``late`` the call made
        without room. ``urgent``, ``last_served`` and ``spare`` are :meth:`acquire`'s."""
        grant = await self._room(place, profile, urgent, deadline, last_served, spare)
        if grant is None and not late:
            raise PacingTimeout(f"no room to write in {place} before the deadline")
        metrics.PLATFORM_WRITES.labels(place.platform, method).inc()
        try:
            return await call()
        except RateLimited as refused:
            metrics.PLATFORM_RATE_LIMITED.labels(place.platform, method).inc()
            self.penalize(place, profile, refused.retry_after)
            raise
        finally:
            if grant is not None:
                self.finish(grant)

    async def _room(
        self,
        place: Place,
        profile: PlatformProfile,
        urgent: bool,
        deadline: float,
        last_served: float,
        spare: float,
    ) -> Grant | None:
        """Room for one held write, waited for until ``deadline``; None when none came.
        :meth:`acquire` gives up at the deadline itself; the wait is cut ``BOOKED_GRACE``
        after it (a database call under way), so that a write woken late on a booking it holds
        is still made on it rather than cancelled in the turn that woke it."""
        remaining = deadline - self.clock.monotonic()
        if remaining <= 0:
            return None
        try:
            async with asyncio.timeout(remaining + BOOKED_GRACE):
                return await self.acquire(
                    place,
                    profile,
                    urgent=urgent,
                    deadline=deadline,
                    hold=True,
                    last_served=last_served,
                    spare=spare,
                )
        except (PacingTimeout, TimeoutError):
            return None

    async def _reserve_shared(
        self,
        ticket: Ticket,
        channel: ChannelState,
        now: float,
        deadline: float | None,
        *,
        book: bool = True,
    ) -> WriteBooking:
        """Count the write in the windows other processes share (those it counts against
        here, spaced in the first as it is paced here), now or (booked, unless not
        ``book``) after the wait returned, or say how long to wait before asking again (see
        :meth:`~storage.WriteWindows.book_writes`; among the reservations asked with it, judged
        in :func:`rank` order); without shared windows (or when the database fails) counted at
        once, without a slot."""
        if self._shared is None:
            return UNSHARED
        counting: list[tuple[str, Window]] = []
        if ticket.channel_bound:
            counting.append(("/".join(ticket.channel), channel.window))
        workspace = self._workspace(ticket.workspace, ticket.profile, ticket.bucket)
        if workspace is not None:
            counting.append(("/".join((*ticket.workspace, f"*{ticket.bucket}")), workspace))
        held = ticket.profile.enforces_windows
        windows = [
            WriteWindow(key, w.capacity - _spared(w, ticket), w.seconds + w.margin, held)
            for key, w in counting
        ]
        spacing = 0.0
        if counting and self._paced(ticket, channel, in_channel=ticket.channel_bound):
            first = counting[0][1]
            spacing = first.seconds / first.capacity
        within = channel.window.seconds if deadline is None else deadline - now
        if not book:
            within = 0.0
        try:
            return await self._shared.book_writes(
                windows,
                spacing=spacing,
                within=min(within, channel.window.seconds),
                rank=rank(ticket, now),
                for_room=ticket.spare == 0,
            )
        except StorageError as error:
            log.warning("shared write windows unavailable, this process's own applies: %s", error)
            return UNSHARED

    def _unbook(self, slot: int | None) -> None:
        """Give back ``slot``, a write counted in the shared windows that will not be made on it
        (see the module docstring); ``None``: counted without a slot, nothing to give back."""
        if self._shared is not None and slot is not None:
            self._shared.given_back(slot)

    def _grant(
        self,
        ticket: Ticket,
        channel: ChannelState,
        now: float,
        hold: bool,
        booking: WriteBooking | None,
    ) -> Grant:
        if not ticket.profile.enforces_windows:
            finished: float | None = now
        else:
            finished = None if hold else now + UNHELD_ALLOWANCE
        stamp = Stamp(now, finished)
        windows = [channel.window] if ticket.channel_bound else []
        workspace = self._workspace(ticket.workspace, ticket.profile, ticket.bucket)
        if workspace is not None:
            windows.append(workspace)
        for window in windows:
            window.stamps.append(stamp)
            window.last_grant = max(window.last_grant, stamp.granted)
        self.granted += 1
        if self.granted % SWEEP_EVERY_GRANTS == 0:
            self._sweep(now)
        slot = booking.slot if hold and booking is not None else None
        return Grant(stamp, windows, ticket.channel, slot, open=hold)

    def finish(self, grant: Grant) -> None:
        """A held write's platform call is over (returned or failed): it counts from now for
        a whole window, here and in the windows other processes share (where its platform
        does not enforce its windows, from its grant still). Idempotent; a no-op for a write
        granted without ``hold`` or given back."""
        if not grant.open:
            return
        grant.open = False
        if grant.stamp.finished is None:
            grant.stamp.finished = self.clock.monotonic()
            self._changed_in(grant.channel)
        self._finish_shared(grant)

    def give_back(self, grant: Grant) -> None:
        """A held write was not made after all: its room is given back, here and in the
        windows other processes share, as an unused booking is (pacing here is not undone).
        Idempotent; a no-op once it finished or for a write granted without ``hold``."""
        if grant.open:
            grant.open = False
            for window in grant.windows:
                with contextlib.suppress(ValueError):
                    window.stamps.remove(grant.stamp)
            self._unbook(grant.slot)
            self._changed_in(grant.channel)

    def _finish_shared(self, grant: Grant) -> None:
        if self._shared is not None and grant.slot is not None:
            self._shared.finished(grant.slot)

    def _sweep(self, now: float) -> None:
        for key, channel in list(self._channels.items()):
            self._free_at(channel.window, now)
            idle = not channel.waiting and not channel.window.stamps
            if idle and channel.blocked_until <= now:
                del self._channels[key]
        for workspace_key, buckets in list(self._workspaces.items()):
            if workspace_key in self._waiting:
                continue
            for bucket, window in list(buckets.items()):
                self._free_at(window, now)
                if not window.stamps:
                    del buckets[bucket]
            if not buckets:
                del self._workspaces[workspace_key]
        metrics.PACED_CHANNELS.set(len(self._channels))

    def penalize(self, place: Place, profile: PlatformProfile, retry_after: float) -> None:
        """The platform answered "rate limited, retry after": hold the channel's writes."""
        channel_key, _ = self.keys(place)
        channel = self._channel(channel_key, profile)
        until = self.clock.monotonic() + max(retry_after, 0.0) + self.margin
        channel.blocked_until = max(channel.blocked_until, until)
        self._changed_in(channel_key)


def _window(capacity: int, seconds: float, margin: float) -> Window:
    """A window of at most ``capacity`` writes per ``seconds`` (at least one), each counting
    ``margin`` more."""
    return Window(max(capacity, 1), seconds, margin=margin)


def _spared(window: Window, ticket: Ticket) -> int:
    """How many of ``window``'s writes ``ticket`` leaves free for others."""
    return math.floor(window.capacity * ticket.spare)


def _ended(stamp: Stamp, now: float) -> float:
    """When ``stamp``'s write is taken as finished: its finish; while in flight, ``now`` (a
    lower bound), at most ``IN_FLIGHT_LIMIT`` after its grant."""
    if stamp.finished is not None:
        return stamp.finished
    if now - stamp.granted >= IN_FLIGHT_LIMIT:
        return stamp.granted + IN_FLIGHT_LIMIT
    return now
