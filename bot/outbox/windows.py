"""The accounting under :class:`bot.outbox.pacing.Pacer`: what a waiting write would show
(:class:`Demand`), a granted write's stamp (in flight until its call returns), a rolling
window of stamps, and a waiting write's ticket, ranked: urgent writes first, then streams
stalest first (seconds the oldest unshown text has waited + unshown characters /
``CHARS_PER_STALE_SECOND``, plus ``FIRST_MESSAGE_BONUS`` for a stream without a message; a
finished stream's unshown characters weigh double and it gets ``FINAL_TEXT_BONUS``), then the
rest, least recently served first.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.kernel import SurfaceLimits, WriteKind

CHARS_PER_STALE_SECOND = 800.0
"""How many unshown characters weigh as much as one second of waiting, when ranking streams."""
FIRST_MESSAGE_BONUS = 0.5
"""Seconds added to the staleness of a stream that has no message yet."""
FINAL_TEXT_BONUS = 0.5
"""Seconds added to the staleness of a finished stream (its unshown characters also count twice)."""
IN_FLIGHT_LIMIT = 60.0
"""A held write never finished is taken as finished this long after its grant."""

ChannelKey = tuple[str, str, str]
WorkspaceKey = tuple[str, str]
SHARED = ""
"""The workspace window of the writes whose kind has no window of its own."""


@dataclass(frozen=True)
class Demand:
    """What a waiting stream write would show, read whenever the pacer picks the next writer.

    ``unseen`` is how many received characters are not shown yet; ``since`` is the clock time
    the oldest of them arrived (or the stream ended, for its final text; ``None``: nothing has
    waited, read as "now"); ``first`` is true when the write posts the stream's first message;
    ``final`` when the stream has ended (the write lands its final text).
    """

    unseen: int
    since: float | None
    first: bool = False
    final: bool = False

    def waited(self, now: float) -> float:
        """Seconds the oldest unshown text has waited at ``now``."""
        return 0.0 if self.since is None else now - self.since


class StreamDemand:
    """A stream's :class:`Demand`, kept current by its writer (the renderer, whenever text
    arrives, the stream ends or a write lands) and read by the pacer at every decision."""

    def __init__(self, current: Demand) -> None:
        self.current = current


@dataclass(eq=False)
class Stamp:
    granted: float
    finished: float | None = None

    def counted_until(self, now: float, seconds: float, margin: float) -> float:
        """When this write leaves a ``seconds`` window (a lower bound while it is in flight)."""
        if self.finished is not None:
            end = self.finished
        elif now - self.granted >= IN_FLIGHT_LIMIT:
            end = self.granted + IN_FLIGHT_LIMIT
        else:
            end = now
        return end + seconds + margin


class Window:
    """At most ``capacity`` writes counted in any ``seconds``-long span."""

    def __init__(self, capacity: int, seconds: float) -> None:
        self.capacity = max(capacity, 1)
        self.seconds = seconds
        self.stamps: list[Stamp] = []
        self.last_grant = -math.inf

    def free_at(self, now: float, margin: float, *, paced: bool = False) -> float:
        """The earliest time a write fits (a lower bound while writes are in flight)."""
        ends = [stamp.counted_until(now, self.seconds, margin) for stamp in self.stamps]
        if any(end <= now for end in ends):
            self.stamps = [s for s, end in zip(self.stamps, ends, strict=True) if end > now]
            ends = [end for end in ends if end > now]
        ready = now
        if len(ends) >= self.capacity:
            ready = sorted(ends)[len(ends) - self.capacity]
        if paced:
            ready = max(ready, self.last_grant + self.seconds / self.capacity)
        return ready

    def spend(self, stamp: Stamp) -> None:
        self.stamps.append(stamp)
        self.last_grant = max(self.last_grant, stamp.granted)

    def give_back(self, stamp: Stamp) -> None:
        with contextlib.suppress(ValueError):
            self.stamps.remove(stamp)


@dataclass(eq=False)
class Ticket:
    channel: ChannelKey
    workspace: WorkspaceKey
    urgent: bool
    last_served: float
    sequence: int
    limits: SurfaceLimits
    demand: StreamDemand | None
    bucket: str = SHARED
    kind: WriteKind | None = None
    channel_bound: bool = True
    """Whether the write counts against its channel's window."""

    def final(self) -> bool:
        return self.demand is not None and self.demand.current.final

    def rank(self, now: float) -> tuple[int, float, float]:
        """Lower goes first: urgent writes, then streams stalest first, then the rest (only a
        stream's rank moves with ``now`` and its text)."""
        if self.urgent:
            return (0, self.last_served, self.sequence)
        if self.demand is not None:
            demand = self.demand.current
            staleness = demand.waited(now) + demand.unseen / CHARS_PER_STALE_SECOND
            if demand.first:
                staleness += FIRST_MESSAGE_BONUS
            if demand.final:
                staleness += FINAL_TEXT_BONUS + demand.unseen / CHARS_PER_STALE_SECOND
            return (1, -staleness, self.sequence)
        return (2, self.last_served, self.sequence)


@dataclass
class ChannelState:
    """A channel's window and the writes waiting in it. While none of them is a stream's, their
    ranks do not move with time, so the first is ranked once per change of who waits."""

    window: Window
    blocked_until: float = -math.inf
    waiting: list[Ticket] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    streams: int = 0
    """How many of the waiting writes describe a stream's demand (their ranks move)."""
    leader: Ticket | None = None
    """The first of ``waiting`` by rank, once ranked (only while ``streams`` is 0)."""

    def join(self, ticket: Ticket) -> None:
        self.waiting.append(ticket)
        self.streams += ticket.demand is not None
        self.leader = None

    def leave(self, ticket: Ticket) -> None:
        self.waiting.remove(ticket)
        self.streams -= ticket.demand is not None
        self.leader = None

    def first(self, now: float) -> Ticket:
        """The first waiting write by rank; only while no stream's write waits."""
        if self.leader is None:
            self.leader = min(self.waiting, key=lambda t: t.rank(now))
        return self.leader


class Grant:
    """One granted write. With ``hold=True`` the write counts as in flight until :meth:`finish`
    (call it once the platform call returned or failed) or :meth:`cancel` (the write was not
    made after all); both are idempotent. Without ``hold`` both are no-ops. ``now`` reads the
    pacer's clock; ``changed`` tells the pacer that room may have opened."""

    def __init__(
        self,
        stamp: Stamp,
        windows: list[Window],
        now: Callable[[], float],
        changed: Callable[[], None],
    ) -> None:
        self._stamp = stamp
        self._windows = windows
        self._now = now
        self._changed = changed

    @property
    def granted_at(self) -> float:
        """Clock time of the grant."""
        return self._stamp.granted

    def finish(self) -> None:
        """The platform call is over: the write counts from now for a whole window."""
        if self._stamp.finished is None:
            self._stamp.finished = self._now()
            self._changed()

    def cancel(self) -> None:
        """The write was not made: its room is given back (pacing is not undone)."""
        if self._stamp.finished is None:
            for window in self._windows:
                window.give_back(self._stamp)
            self._stamp.finished = -math.inf
            self._changed()
