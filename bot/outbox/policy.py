"""What a write does when the pacer has no room for it in time or the platform refuses it: its
:class:`WritePolicy`, and the two refusals a policy can end in.

- ``MUST_DELIVER`` (job results, reports, notes, marks): wait up to ``URGENT_WAIT`` seconds as an
  urgent write, then write anyway and let the platform decide. A platform's "rate limited, retry
  after N s" holds the channel in the pacer for N s and the write is retried (at most
  ``ATTEMPTS`` times while time is left); then one last write goes out whatever the pacer says,
  and its error, if any, propagates.
- ``RAISE`` (chat questions, replies, notes): the same wait and retries, but when the platform
  kept refusing, :class:`WriteRateLimited` (a :class:`~bot.kernel.UserError` the router shows the
  user) ends it.
- ``SKIP_IF_BUSY`` (progress edits): wait at most ``SKIP_WAIT`` seconds as a paced write, least
  recently served first, leaving ``PROGRESS_SPARE`` of each window free (room for that many
  results or answers at once beside progress); no room, or a refusal (which holds the channel),
  raises :class:`WriteSkipped` and nothing is written.
- ``NOW`` (answers to an interaction: notices, forms, private messages, threads): written at once,
  not paced (the platform answers an interaction within seconds or never); its errors propagate.
- ``BEST_EFFORT`` (activity: "is thinking…", typing): written at once; a refusal or a platform
  error is logged and changes nothing else.

A streamed answer's writes take a :class:`Stream` policy instead (``Outbox.room``): paced, ranked
stalest first by what they would show, and named only once there is room.
"""

from __future__ import annotations

import asyncio
import enum
import math
from dataclasses import dataclass

from bot.kernel import UserError, WriteKind
from bot.outbox.windows import StreamDemand

URGENT_WAIT = 30.0
SKIP_WAIT = 0.3
PROGRESS_SPARE = 0.25
"""The share of each write window (rounded down: one of 5, none below 4) progress edits leave
free: that many results or answers find room at once instead of a window full of progress."""
ATTEMPTS = 3


@dataclass(frozen=True)
class PolicyRules:
    """How a paced policy's write waits for room: up to ``wait`` seconds, ``urgent`` ones are
    not paced and go first, and a rate-limited write is tried ``attempts`` times under the
    pacer (``NOW`` and ``BEST_EFFORT`` are not paced), leaving a ``spare`` share of each window
    free for other writes; ``name`` tells the policies apart."""

    name: str
    wait: float = 0.0
    urgent: bool = False
    attempts: int = 1
    spare: float = 0.0


class WritePolicy(enum.Enum):
    """What a write does when there is no room or the platform refuses (see the module
    docstring); its value says how it waits (read without a call: the write path is short)."""

    MUST_DELIVER = PolicyRules("must_deliver", URGENT_WAIT, urgent=True, attempts=ATTEMPTS)
    RAISE = PolicyRules("raise", URGENT_WAIT, urgent=True, attempts=ATTEMPTS)
    SKIP_IF_BUSY = PolicyRules("skip_if_busy", SKIP_WAIT, spare=PROGRESS_SPARE)
    NOW = PolicyRules("now")
    BEST_EFFORT = PolicyRules("best_effort")


@dataclass(frozen=True)
class Stream:
    """The policy of a streamed answer's writes: paced, ranked among waiting writes by
    ``demand`` (kept current by the renderer) and then by ``last_served`` (pacer clock), counted
    as a write of ``kind`` (its workspace window). The wait ends with
    :class:`~bot.outbox.PacingTimeout` past ``deadline``, and with :class:`WriteSkipped` when
    ``until`` is set first (the stream ended: its final text waits again, with a deadline). A
    rate-limited write holds the channel and its :class:`~bot.kernel.RateLimited` propagates
    (the renderer writes the newest text next)."""

    demand: StreamDemand
    kind: WriteKind
    last_served: float = -math.inf
    deadline: float | None = None
    until: asyncio.Event | None = None


class WriteRateLimited(UserError):
    """The platform kept refusing a write for rate limiting; ``retry_after`` is its last
    request (seconds)."""

    def __init__(self, retry_after: float) -> None:
        self.retry_after = retry_after
        seconds = max(1, math.ceil(retry_after))
        super().__init__(
            "The platform is rate-limiting genbot's messages here right now, so this could "
            f"not be posted. Please try again in about {seconds} second"
            f"{'' if seconds == 1 else 's'}."
        )


class WriteSkipped(Exception):
    """A ``SKIP_IF_BUSY`` write found no room in time, or the platform refused it; or a
    :class:`Stream` write's wait ended, or it was no longer wanted once there was room: nothing
    was written."""
