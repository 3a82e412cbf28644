"""The database server's wall clock, read in this process (see :class:`ServerClock`)."""

from __future__ import annotations

import logging
import sys
import time
from typing import Final

from storage.queries.base import Clock
from storage.sql.session import Database, Session

log = logging.getLogger("genbot.storage")

SAMPLES: Final = 3
"""Round trips the first measurement makes (the tightest one counts)."""
TOLD_STEP: Final = 1.0
"""Seconds a correction must move the clock by to be logged (a host's clock that stepped or
drifted, or the server's)."""


def since_boot() -> float:
    """Seconds since this host booted, its suspends included (Linux's ``CLOCK_BOOTTIME``)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


ELAPSED: Final[Clock] = since_boot if sys.platform == "linux" else time.monotonic
"""What carries a :class:`ServerClock` between readings unless another is given: a clock no
step of the wall clock moves that, on Linux, counts the time the host spent suspended
(:func:`since_boot`; ``time.monotonic`` stands still then, so a resumed process would stamp
times behind by the pause until its next heartbeat); elsewhere ``time.monotonic``."""


class ServerClock:
    """The wall clock every process on a shared database stamps and compares stored times with:
    the database server's, carried between readings by a monotonic clock of this host's
    (``monotonic() + offset``; :data:`ELAPSED` unless another is given, which on Linux counts
    the time the host spent suspended). Processes on hosts whose wall clocks disagree then
    agree on every lease, sweep, grace and write window; a step of this host's wall clock
    changes none of them.

    The offset is measured when the store opens (:meth:`measure`: the tightest of a few round
    trips) and checked at each lease heartbeat, whose first statement reads the server's clock
    too (:meth:`observe`: no statement more). The server read its clock somewhere inside the
    round trip, so its reading minus this clock's when the statement was sent and when it was
    answered bound the correction. The offset moves only when it falls outside those bounds
    (this host's monotonic clock drifted, or the server's clock stepped), to the nearer one,
    never further than a round trip proves it off: its error is at most half the first
    measurement's round trip, or the whole round trip it was last moved by, and between
    corrections the clock runs at the monotonic clock's rate, never stepping back.

    ``host`` (this host's wall clock) starts the offset, for what is read before the first
    measurement, and is what :meth:`ahead_of_host` compares with; tests inject it (a host a
    minute ahead) and ``monotonic`` (to step or drift it, or count a suspend)."""

    def __init__(self, host: Clock = time.time, monotonic: Clock = ELAPSED) -> None:
        self.monotonic = monotonic
        """What carries the server's time between readings: seconds from a fixed point, never
        stepping back."""
        self.host = host
        """This host's wall clock (:meth:`ahead_of_host` compares with it)."""
        self.offset = host() - monotonic()
        """Seconds from the monotonic clock to the server's wall clock."""
        self.error: float | None = None
        """The most the offset can be off, as the sample it was last moved by shows: half its
        round trip at the first measurement, its whole round trip later (None: not
        measured yet: the offset is this host's wall clock's)."""

    def __call__(self) -> float:
        return self.monotonic() + self.offset

    def ahead_of_host(self) -> float:
        """Seconds the server's clock is ahead of this host's wall clock now (negative:
        behind), as this process last measured the server's: moved by each correction and by
        each step of this host's clock (next to nothing before the first measurement)."""
        return self() - self.host()

    def observe(self, sent: float, server: float, answered: float) -> None:
        """A round trip, sent at ``sent`` and answered at ``answered`` (readings of this
        clock), in which the server read ``server`` on its own. The first measurement moves
        the offset to the middle of the bounds it gives; later, the offset moves only when
        it falls outside them, and then to the nearer bound: a slow round trip (a lock waited
        for, a late event loop) leaves its middle anywhere in it, so moving there could put a
        clock that was off by milliseconds seconds off, and step it back at the next beat. A
        round trip answered before it was sent (a reading in doubt) is ignored."""
        if answered < sent:
            return
        low, high = server - answered, server - sent
        first = self.error is None
        if first:
            step, self.error = (low + high) / 2, (high - low) / 2
        elif low <= 0.0 <= high:
            return
        else:
            step, self.error = (low if low > 0.0 else high), high - low
        self.offset += step
        if abs(step) >= TOLD_STEP:
            log.warning(
                "%s: stored times follow the database server's clock, %+.1f s from this"
                " process's (±%.3f s)",
                "this host's wall clock is off the database server's"
                if first
                else "the database server's clock and this process's moved apart",
                step,
                self.error,
            )

    async def measure(self, db: Database, samples: int = SAMPLES) -> None:
        """Read the server's clock ``samples`` times in one transaction and :meth:`observe`
        the tightest round trip (nothing where the database has no server of its own)."""
        server_time = db.dialect.server_time
        if server_time is None:
            return
        query = f"SELECT {server_time} AS server_now"

        async def work(tx: Session) -> list[tuple[float, float, float]]:
            taken = []
            for _ in range(samples):
                sent = self()
                row = await tx.fetch_one(query)
                assert row is not None
                taken.append((sent, float(row["server_now"]), self()))
            return taken

        taken = await db.transaction(work, repeatable=True)
        self.observe(*min(taken, key=lambda sample: sample[2] - sample[0]))
