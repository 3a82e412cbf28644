"""What :class:`bot.outbox.pacing.Pacer` keeps: what a waiting stream write would show
(:class:`Demand`, kept current in a :class:`StreamDemand`), a granted write's :class:`Stamp`
(in flight until its call returns, where the platform enforces its windows), a rolling
:class:`Window` of stamps, a waiting write's :class:`Ticket`, a channel's state
(:class:`ChannelState`) and a granted write's :class:`Grant`. Plain records: the pacer does the
arithmetic (when a window has room, who goes first), so a write passing through the pacer reads
them without calling into this module.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from bot.kernel import PlatformProfile, WriteKind

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


class StreamDemand:
    """A stream's :class:`Demand`, kept current by its writer (the renderer, whenever text
    arrives, the stream ends or a write lands) and read by the pacer at every decision."""

    def __init__(self, current: Demand) -> None:
        self.current = current


@dataclass(eq=False)
class Stamp:
    """A granted write: when, and when it starts counting its window — its platform call's
    return, or its grant where the platform does not enforce its windows (``None``: in
    flight)."""

    granted: float
    finished: float | None = None


@dataclass(eq=False)
class Window:
    """At most ``capacity`` (at least 1) writes counted in any ``seconds``-long span, a stamp
    counting ``margin`` more: the stamps still counted in it and the latest grant (pacing
    spaces grants from it)."""

    capacity: int
    seconds: float
    margin: float = 0.0
    stamps: list[Stamp] = field(default_factory=list)
    last_grant: float = -math.inf


@dataclass(eq=False)
class Ticket:
    channel: ChannelKey
    workspace: WorkspaceKey
    urgent: bool
    last_served: float
    sequence: int
    profile: PlatformProfile
    demand: StreamDemand | None
    bucket: str = SHARED
    kind: WriteKind | None = None
    channel_bound: bool = True
    """Whether the write counts against its channel's window."""
    spare: float = 0.0
    """The share of each of its windows the write leaves free for others."""


@dataclass
class ChannelState:
    """A channel's window and the writes waiting in it. While none of them is a stream's, their
    ranks do not move with time, so they are ranked once per change of who waits."""

    window: Window
    blocked_until: float = -math.inf
    waiting: list[Ticket] = field(default_factory=list)
    waiters: dict[asyncio.Future[None], None] = field(default_factory=dict)
    """The writes waiting for a change in the channel, in the order they began to wait: each is
    woken by resolving its future."""
    streams: int = 0
    """How many of the waiting writes describe a stream's demand (their ranks move)."""
    order: list[Ticket] | None = None
    """``waiting`` by rank, first first, once ranked (only while ``streams`` is 0)."""
    together_after: float = -math.inf
    """Until when this channel's writes ask for their turns in the windows other processes
    share one after another, not together: a window after the latest time those windows said,
    over all their turn-aways of writes asking together, that the channel had room there again."""


@dataclass(eq=False)
class Grant:
    """One granted write: its ``stamp``, counted in ``windows``, in ``channel``. A write
    granted with ``hold`` is ``open`` until the pacer is told it finished
    (:meth:`~bot.outbox.pacing.Pacer.finish`) or was not made
    (:meth:`~bot.outbox.pacing.Pacer.give_back`); until then it counts as in flight, unless
    its platform does not enforce its windows (it counts from its grant)."""

    stamp: Stamp
    windows: list[Window]
    channel: ChannelKey
    slot: int | None = None
    """Its slot in the windows other processes share, if it was counted there with one."""
    open: bool = False
