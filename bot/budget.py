"""Write budgets for message sends and edits, shared by every stream of a process.

A :class:`RenderBudget` keeps, per channel ``(platform, workspace, channel)``, a sliding log of
the writes it granted — at most ``limits.edits_per_window_per_channel`` in any
``limits.edit_window_seconds`` — and, when ``limits.edits_per_minute_per_workspace`` is set, the
same per workspace over 60 s. Threads share their parent channel's budget. Waiting writers are
served by priority (urgent first: new messages, finished messages, final text), then the stream
served longest ago, then arrival, so concurrent streams in one channel share it fairly.
Interim (non-urgent) writes are also paced — at most one per ``window / capacity`` seconds — so
a stream updates smoothly instead of spending a window's budget in a burst; urgent writes may
burst. Only shared limits live here; the per-message minimum interval is the renderer's.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.events import Place, SurfaceLimits

WORKSPACE_WINDOW_SECONDS = 60.0
SWEEP_EVERY_GRANTS = 512
_MIN_SLEEP = 1e-6

ChannelKey = tuple[str, str, str]
WorkspaceKey = tuple[str, str]


@dataclass(frozen=True)
class Clock:
    """Time as the renderer sees it: a monotonic reading and a sleep. Tests inject fakes."""

    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


class BudgetTimeout(Exception):
    """A write could not get budget before its deadline."""


class _Window:
    """At most ``capacity`` stamps in any ``seconds``-long span (a stamp lasts ``seconds``)."""

    def __init__(self, capacity: int, seconds: float) -> None:
        self.capacity = max(capacity, 1)
        self.seconds = seconds
        self.stamps: deque[float] = deque()

    def free_at(self, now: float, margin: float, *, paced: bool = False) -> float:
        while self.stamps and self.stamps[0] + self.seconds + margin <= now:
            self.stamps.popleft()
        ready = now
        if len(self.stamps) >= self.capacity:
            ready = self.stamps[len(self.stamps) - self.capacity] + self.seconds + margin
        if paced and self.stamps:
            ready = max(ready, self.stamps[-1] + self.seconds / self.capacity)
        return ready


@dataclass(eq=False)
class _Ticket:
    channel: ChannelKey
    workspace: WorkspaceKey
    rank: tuple[int, float, int]
    limits: SurfaceLimits

    @property
    def urgent(self) -> bool:
        return self.rank[0] == 0


@dataclass
class _Channel:
    window: _Window
    blocked_until: float = -math.inf
    waiting: list[_Ticket] = field(default_factory=list)


class RenderBudget:
    """The process-wide registry of write budgets (one per process, passed to every renderer).

    ``margin`` seconds are added to every window and retry-after to absorb the time between a
    grant and the platform seeing the request.
    """

    def __init__(self, clock: Clock | None = None, *, margin: float = 0.1) -> None:
        self.clock = clock or Clock()
        self.margin = margin
        self._channels: dict[ChannelKey, _Channel] = {}
        self._workspaces: dict[WorkspaceKey, _Window] = {}
        self._waiting: dict[WorkspaceKey, list[_Ticket]] = {}
        self._changed = asyncio.Event()
        self._sequence = itertools.count()
        self.granted = 0

    @staticmethod
    def keys(place: Place) -> tuple[ChannelKey, WorkspaceKey]:
        """The channel and workspace keys a place's writes count against."""
        return (
            (place.platform, place.workspace_id, place.channel_id),
            (place.platform, place.workspace_id),
        )

    def _channel(self, key: ChannelKey, limits: SurfaceLimits) -> _Channel:
        channel = self._channels.get(key)
        if channel is None:
            window = _Window(limits.edits_per_window_per_channel, limits.edit_window_seconds)
            channel = self._channels[key] = _Channel(window)
        return channel

    def _workspace(self, key: WorkspaceKey, limits: SurfaceLimits) -> _Window | None:
        per_minute = limits.edits_per_minute_per_workspace
        if per_minute is None:
            return None
        window = self._workspaces.get(key)
        if window is None:
            window = self._workspaces[key] = _Window(per_minute, WORKSPACE_WINDOW_SECONDS)
        return window

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _ready_at(self, ticket: _Ticket, now: float) -> float:
        paced = not ticket.urgent
        channel = self._channel(ticket.channel, ticket.limits)
        ready = max(channel.window.free_at(now, self.margin, paced=paced), channel.blocked_until)
        workspace = self._workspace(ticket.workspace, ticket.limits)
        if workspace is not None:
            ready = max(ready, workspace.free_at(now, self.margin, paced=paced))
        return ready

    def _first_in_channel(self, ticket: _Ticket) -> bool:
        return min(self._channels[ticket.channel].waiting, key=lambda t: t.rank) is ticket

    def _is_next(self, ticket: _Ticket, now: float) -> bool:
        """Whether ``ticket`` is first in its channel and, among the channel-firsts that could
        write now, first in its workspace."""
        if not self._first_in_channel(ticket):
            return False
        if self._workspace(ticket.workspace, ticket.limits) is None:
            return True
        return not any(
            other is not ticket
            and other.rank < ticket.rank
            and self._first_in_channel(other)
            and self._ready_at(other, now) <= now
            for other in self._waiting[ticket.workspace]
        )

    async def acquire(
        self,
        place: Place,
        limits: SurfaceLimits,
        *,
        urgent: bool,
        last_served: float = -math.inf,
        deadline: float | None = None,
    ) -> None:
        """Wait for room for one write in ``place`` and count it.

        ``last_served`` is when the caller's stream last got a write (fairness);
        ``deadline`` (clock time) bounds the wait with :class:`BudgetTimeout`.
        """
        channel_key, workspace_key = self.keys(place)
        rank = (0 if urgent else 1, last_served, next(self._sequence))
        ticket = _Ticket(channel_key, workspace_key, rank, limits)
        channel = self._channel(channel_key, limits)
        channel.waiting.append(ticket)
        self._waiting.setdefault(workspace_key, []).append(ticket)
        try:
            while True:
                now = self.clock.monotonic()
                ready = self._ready_at(ticket, now)
                if ready > now:
                    if deadline is not None and ready > deadline:
                        raise BudgetTimeout(f"no write budget in {channel_key} before the deadline")
                    await self.clock.sleep(max(ready - now, _MIN_SLEEP))
                    continue
                if self._is_next(ticket, now):
                    channel.window.stamps.append(now)
                    workspace = self._workspace(workspace_key, limits)
                    if workspace is not None:
                        workspace.stamps.append(now)
                    self.granted += 1
                    if self.granted % SWEEP_EVERY_GRANTS == 0:
                        self._sweep(now)
                    return
                await self._changed.wait()
        finally:
            channel.waiting.remove(ticket)
            self._waiting[workspace_key].remove(ticket)
            if not self._waiting[workspace_key]:
                del self._waiting[workspace_key]
            self._notify()

    @property
    def channels_tracked(self) -> int:
        """How many channels the budget currently remembers (idle ones are swept)."""
        return len(self._channels)

    def _sweep(self, now: float) -> None:
        for key, channel in list(self._channels.items()):
            channel.window.free_at(now, self.margin)
            idle = not channel.waiting and not channel.window.stamps
            if idle and channel.blocked_until <= now:
                del self._channels[key]
        for workspace_key, window in list(self._workspaces.items()):
            window.free_at(now, self.margin)
            if not window.stamps and workspace_key not in self._waiting:
                del self._workspaces[workspace_key]

    def penalize(self, place: Place, limits: SurfaceLimits, retry_after: float) -> None:
        """The platform answered "rate limited, retry after": hold the channel's writes."""
        channel_key, _ = self.keys(place)
        channel = self._channel(channel_key, limits)
        until = self.clock.monotonic() + max(retry_after, 0.0) + self.margin
        channel.blocked_until = max(channel.blocked_until, until)
        self._notify()
