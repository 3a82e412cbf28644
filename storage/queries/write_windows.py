"""Platform write windows counted across processes.

Each granted write is a row ``(key, granted_at, until, slot)``: it counts in its window until
``until``. A platform counts a write when its request arrives, somewhere between the grant and the
call's return, so a row first counts for its window's length after the grant plus ``ALLOWANCE``
for the request; once its writer says the call returned (:meth:`WriteWindows.finished`), its
window's length from then — the same end a process's own pacer counts its writes to, and shorter
unless the call took longer than the allowance. In a window that is not ``held`` (a platform that
does not count writes itself: :attr:`~storage.WriteWindow.held`) a row counts for exactly its
window's length from its grant, and no finish is told. A write counted but then not made (a booking
not used, a grant given back: :meth:`WriteWindows.given_back`; a reservation whose writer was
cancelled while it ran) stops counting: its rows are deleted. Those finishes and give-backs go
into the writer's next reservation transaction (when it fails, into the one after it: telling
one twice changes nothing). A finish has no transaction of its own (until told, its row counts
at most the allowance longer). A give-back asks for that next transaction itself (:data:`TELL`,
a reservation of no write): it joins the reservations gathering or asked while one runs, and
when the process asks for none (its writer was cancelled and nothing else writes) it is a small
transaction of its own, with the finishes told meanwhile (run again once when its connection
was lost: it only tells), so a row given back — a booking, often seconds ahead — stops counting
a gather and a transaction later, not at its end, while the other processes wait for its room.
A :data:`TELL` whose give-backs another transaction told makes none. A store closing tells its
give-backs first (:meth:`WriteWindows.tell_given_back`); when the writer stops otherwise, a row
not yet told keeps its first end.

A reservation locks each window's key for its transaction (in key order, so two reservations
cannot deadlock), tells the finishes, counts the rows still counting, and inserts one per window
only if every window has room. The reservations a process asks for while one is under way go
together in one transaction (:class:`~storage.queries.grouped.Grouped`), each judged after the
ones ranked before it (its writer's ``rank``, lower first; equal ranks in the order asked), so
that where the windows have room for only some, the writes that go first in the process get
it. Expired rows are deleted now and then, in the same round trip as a reservation's inserts.
Where the database has one process, its own pacing suffices: nothing is counted here.

A write that must wait for its spacing from the channel's previous write (another process's,
often) or for a counted write to stop counting can be booked (:meth:`WriteWindows.book_writes`):
counted now for the moment it may go (its row's ``granted_at``; the window then has room, since
the rows counted now and those booked before it are what is counted then), so the next write is
spaced and counted after it; its writer waits until then and writes without asking again.
Several processes writing into one channel then take turns with one reservation each, instead of
each asking again every time another one went first.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import math
import secrets
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from storage.errors import StorageError
from storage.queries.base import Clock
from storage.queries.grouped import GATHER, Grouped
from storage.records.platforms import WriteBooking, WriteWindow
from storage.sql.dialect import marks
from storage.sql.session import Database, Session, Values

ALLOWANCE = 0.5
"""Seconds a write keeps counting past its window, for the request to reach the platform."""
PRUNE_EVERY: Final = 256
OPEN_FOR: Final = 60.0
"""Seconds a counted write's slot waits for its finish before it is forgotten (its row keeps its
first end)."""
SQL_COUNTING: Final = (
    "SELECT key, granted_at, until FROM write_slots WHERE key IN ({}) AND until > ? ORDER BY until"
)
"""The rows still counting in a reservation's windows, soonest end first: how many each window
counts, its latest grant, and when each of its writes stops counting (the wait of every write
it turns away or books for later). Read once per reservation transaction, in the same round
trip as the locks and the finishes told since the last one."""
SQL_SPEND: Final = "INSERT INTO write_slots (key, granted_at, until, slot) VALUES (?, ?, ?, ?)"
SQL_FINISHED: Final = "UPDATE write_slots SET until = ? WHERE key = ? AND slot = ? AND until > ?"
"""Only rows still counting: the prune deletes only rows that stopped, so neither waits on the
other's row locks."""
SQL_GIVEN_BACK: Final = "DELETE FROM write_slots WHERE key = ? AND slot = ? AND until > ?"
"""Only rows still counting, as ``SQL_FINISHED``."""
SQL_PRUNE: Final = "DELETE FROM write_slots WHERE until < ?"

log = logging.getLogger("genbot.storage")

Rank = tuple[float, ...]
"""A write's rank in its process: of the reservations judged in one transaction, lower first."""
UNRANKED: Final[Rank] = (math.inf,)
"""The rank of a reservation asked without one: after every ranked one."""
Reservation = tuple[Sequence[WriteWindow], float, float, Rank, bool]
"""The windows one write counts in, its spacing, how far ahead it may be booked, its rank, and
whether it may be booked for room (else only for its spacing; see
:meth:`WriteWindows.book_writes`)."""
TELL: Final[Reservation] = ((), 0.0, 0.0, UNRANKED, True)
"""A reservation of no write: the finishes and give-backs told since the last transaction, sent
with the reservations it joins or, alone, in a transaction of their own."""
TOLD: Final = WriteBooking(0.0, False)
""":data:`TELL`'s answer."""
TELL_AT_CLOSE: Final = 2.0
"""Seconds :meth:`WriteWindows.tell_given_back` waits for the give-backs to be told."""
Finish = tuple[float, str, int, float]
"""A finished write's row: its new ``until``, its key and slot, and the time of the finish."""


@dataclass
class WriteWindows:
    """Platform write limits counted across processes, so N processes writing into one
    channel or workspace stay within what the platform allows."""

    db: Database
    clock: Clock

    _reserved_since_prune = 0

    def __post_init__(self) -> None:
        self._slots = itertools.count(secrets.randbits(31) << 32)
        self._open: dict[int, tuple[float, list[WriteWindow]]] = {}
        self._finishes: list[Finish] = []
        self._given_back: list[tuple[str, int]] = []
        self._telling = False
        self._tells: set[asyncio.Task[None]] = set()

    async def reserve_writes(
        self, windows: Sequence[WriteWindow], *, spacing: float = 0.0
    ) -> float:
        """Count one write in every window when each has room (and, with ``spacing``, the
        first window's previous write is at least that many seconds old): returns 0. Else
        nothing is counted and the answer is how many seconds to wait before asking again.
        Always 0 where the database has one process."""
        booking = await self.book_writes(windows, spacing=spacing)
        return booking.wait

    async def book_writes(
        self,
        windows: Sequence[WriteWindow],
        *,
        spacing: float = 0.0,
        within: float = 0.0,
        rank: Rank = UNRANKED,
        for_room: bool = True,
    ) -> WriteBooking:
        """:meth:`reserve_writes`, but a write that may go within ``within`` seconds (for its
        spacing, or when counted writes stop counting) is counted now for that moment (booked):
        the answer says how many seconds to wait and whether the write was counted (then it is
        made after that wait, without asking again; else it is asked again after it). Counted
        immediately, without a slot, where the database has one process. ``rank``: the write's
        among this process's (lower first), which orders the reservations judged together;
        equal ranks in the order asked. Without ``for_room`` it is never booked for room: only
        when every window has room for it now and it waits for its spacing alone (its row
        counts from now: booked for room that frees later, it would take that room at once)."""
        if not windows or self.db.dialect.transaction_lock is None:
            return WriteBooking(0.0, True)
        return await self._reservations((windows, spacing, within, rank, for_room))

    def finished(self, slot: int) -> None:
        """The call of the write counted in ``slot`` returned (or failed): from now on it
        counts for its windows' length, told in this process's next reservation (in a window
        not ``held``, its row already ends right: nothing is told). Idempotent."""
        opened = self._open.pop(slot, None)
        if opened is None:
            return
        now = self.clock()
        self._finishes.extend(
            (now + window.seconds, window.key, slot, now) for window in opened[1] if window.held
        )

    def given_back(self, slot: int) -> None:
        """The write counted in ``slot`` will not be made: it stops counting (its rows are
        deleted, not finished), told in this process's next reservation, which it asks for
        (alone, a transaction of its own: see the module docstring). Idempotent; a no-op once
        :meth:`finished` was told."""
        opened = self._open.pop(slot, None)
        if opened is not None:
            self._given_back.extend((window.key, slot) for window in opened[1])
            self._tell()

    async def tell_given_back(self, within: float = TELL_AT_CLOSE) -> None:
        """Tell the give-backs not told yet, waiting at most ``within`` seconds for their
        transaction (before the database closes: the rows given back would count to their
        end for the other processes)."""
        if self._given_back:
            self._tell()
        if self._tells:
            await asyncio.wait(set(self._tells), timeout=within)

    def _tell(self) -> None:
        """Ask for a transaction to tell what was told (:data:`TELL`), unless one is asked
        already and has not started."""
        if self._telling:
            return
        try:
            task = asyncio.get_running_loop().create_task(self._send_told())
        except RuntimeError:
            return
        self._telling = True
        self._tells.add(task)
        task.add_done_callback(self._tells.discard)

    async def _send_told(self) -> None:
        try:
            await self._reservations(TELL)
        except StorageError as error:
            log.warning("write slots given back not told, the next reservation tells: %s", error)
        except Exception:
            log.exception("write slots given back not told, the next reservation tells")
        finally:
            self._telling = False

    @functools.cached_property
    def _reservations(self) -> Grouped[Reservation, WriteBooking]:
        return Grouped(self._reserve_together, unclaimed=self._unclaimed, gather=GATHER)

    def _unclaimed(self, booking: WriteBooking) -> None:
        """A reservation whose writer was cancelled while its transaction ran: what it counted
        will not be made."""
        if booking.slot is not None:
            self.given_back(booking.slot)

    async def _reserve_together(self, batch: Sequence[Reservation]) -> list[WriteBooking]:
        """One transaction for ``batch``, after the finishes and give-backs told since the last
        one that ran (a failed one's are told again): each reservation, in rank order, fits (0)
        in what is counted and what the ones ranked before it took, is booked for when it may
        go, or waits (nothing taken). Each answer's wait counts from the transaction's return
        (its own time, the lock's included, is taken off). A batch of :data:`TELL` alone with no
        give-back to tell makes no transaction (its finishes wait for the next reservation)."""
        lock = self.db.dialect.transaction_lock
        assert lock is not None
        now = self.clock()
        finishes, self._finishes = self._finishes, []
        given_back, self._given_back = self._given_back, []
        self._telling = False
        asked = sorted(
            (n for n, (windows, *_) in enumerate(batch) if windows), key=lambda n: batch[n][3]
        )
        told: list[tuple[str, Values]] = [(SQL_FINISHED, finish) for finish in finishes]
        told += [(SQL_GIVEN_BACK, (*row, now)) for row in given_back]
        if not asked and not given_back:
            self._finishes[:0] = finishes
            return [TOLD] * len(batch)
        keys = sorted({window.key for windows, *_ in batch for window in windows})
        self._reserved_since_prune += len(asked)
        prune = self._reserved_since_prune >= PRUNE_EVERY
        if prune:
            self._reserved_since_prune = 0
            self._open = {n: o for n, o in self._open.items() if o[0] > now - OPEN_FOR}

        async def work(tx: Session) -> list[WriteBooking]:
            locks: list[tuple[str, Values]] = [(lock, (f"genbot.writes.{key}",)) for key in keys]
            counting: list[tuple[str, Values]] = []
            if keys:
                counting.append((SQL_COUNTING.format(marks(len(keys))), (*keys, now)))
            found = await tx.fetch_each(locks + told + counting)
            rows = found[-1] if keys else []
            counted: Counter[str] = Counter()
            last: dict[str, float] = {}
            ends: dict[str, list[float]] = {}
            for row in rows:
                key = row["key"]
                counted[key] += 1
                last[key] = max(last.get(key, row["granted_at"]), row["granted_at"])
                ends.setdefault(key, []).append(row["until"])
            taken: Counter[str] = Counter()
            spend: list[tuple[str, float, float, int]] = []
            opened: dict[int, tuple[float, list[WriteWindow]]] = {}
            answers = [TOLD] * len(batch)
            for n in asked:
                windows, spacing, within, _, for_room = batch[n]
                room, exact = 0.0, True
                for window in windows:
                    stored = counted.get(window.key, 0)
                    over = stored + taken[window.key] - max(window.capacity, 1)
                    if over >= stored:
                        room, exact = max(room, window.seconds + _allowance(window)), False
                    elif over >= 0:
                        stopping = ends.get(window.key, [])
                        room = max(room, (stopping[over] if over < len(stopping) else now) - now)
                first = last.get(windows[0].key)
                spaced = first + spacing - now if spacing > 0 and first is not None else 0.0
                wait = max(room, spaced, 0.0)
                bookable = exact and wait <= within and (for_room or room <= 0)
                if wait > 0 and not bookable:
                    answers[n] = WriteBooking(wait, False)
                    continue
                at, slot = now + wait, next(self._slots)
                for window in windows:
                    taken[window.key] += 1
                    last[window.key] = max(last.get(window.key, at), at)
                    spend.append((window.key, at, at + window.seconds + _allowance(window), slot))
                opened[slot] = (at, list(windows))
                answers[n] = WriteBooking(wait, True, slot)
            await tx.fetch_each(
                [(SQL_SPEND, row) for row in spend] + ([(SQL_PRUNE, (now,))] if prune else [])
            )
            self._open.update(opened)
            return answers

        try:
            answers = await self.db.transaction(work, repeatable=not asked)
        except BaseException:
            self._finishes[:0] = finishes
            self._given_back[:0] = given_back
            raise
        late = self.clock() - now
        return [replace(answer, wait=max(answer.wait - late, 0.0)) for answer in answers]


def _allowance(window: WriteWindow) -> float:
    """How long past its window a write counts until its finish is told."""
    return ALLOWANCE if window.held else 0.0
