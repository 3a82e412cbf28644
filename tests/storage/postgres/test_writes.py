"""Shared write windows: processes writing into one channel together stay within its limit."""

from __future__ import annotations

import asyncio
import time

import pytest

from storage import StorageError, WriteWindow
from storage.postgres import PostgresStore
from storage.queries import write_windows
from storage.queries.write_windows import (
    ALLOWANCE,
    SQL_FINISHED,
    SQL_GIVEN_BACK,
    SQL_PRUNE,
    SQL_SPEND,
)
from storage.sql.server_clock import ServerClock
from storage.sql.session import Session
from tests.postgres import PostgresCluster
from tests.storage.conftest import ManualClock
from tests.storage.counting import counted
from tests.storage.helpers import (
    LONG_GATHER,
    after_turns,
    holding,
    terminate_lock_waiters,
    terminate_table_waiters,
    until_waiting_for_lock,
    until_waiting_for_table,
)

CHANNEL = WriteWindow("discord/g1/c1", capacity=3, seconds=5.0)
WORKSPACE = WriteWindow("slack/T1/*", capacity=4, seconds=60.0)


@pytest.fixture
def url(postgres: PostgresCluster) -> str:
    return postgres.create_schema()


async def test_processes_together_get_no_more_than_the_window_allows(url: str) -> None:
    clock = ManualClock()
    stores = [await PostgresStore.open(url, clock=clock, pool_size=2) for _ in range(3)]
    try:
        answers = await asyncio.gather(
            *(stores[n % 3].write_windows.reserve_writes([CHANNEL]) for n in range(9))
        )
        assert sorted(answers)[:3] == [0.0, 0.0, 0.0]
        assert all(
            wait == pytest.approx(CHANNEL.seconds + ALLOWANCE) for wait in sorted(answers)[3:]
        )
        clock.advance(CHANNEL.seconds + ALLOWANCE)
        assert await stores[1].write_windows.reserve_writes([CHANNEL]) == 0.0
    finally:
        for store in stores:
            await store.close()


async def test_a_host_a_minute_ahead_counts_the_others_writes_in_their_window(url: str) -> None:
    """Each process counted the stored writes against its host's wall clock: one a minute
    ahead saw the others' writes of the last seconds as long past, and wrote beyond the
    channel's limit. Both count on the database server's clock now."""
    async with (
        await PostgresStore.open(url, clock=ServerClock()) as on_time,
        await PostgresStore.open(url, clock=ServerClock(lambda: time.time() + 60)) as ahead,
    ):
        for _ in range(CHANNEL.capacity):
            assert await on_time.write_windows.reserve_writes([CHANNEL]) == 0.0
        wait = await ahead.write_windows.reserve_writes([CHANNEL])
        assert 0 < wait <= CHANNEL.seconds + ALLOWANCE


async def test_a_write_counts_in_every_window_or_in_none(url: str) -> None:
    clock = ManualClock()
    async with await PostgresStore.open(url, clock=clock) as store:
        other = WriteWindow("slack/T1/C2", capacity=10, seconds=5.0)
        for _ in range(4):
            assert await store.write_windows.reserve_writes([other, WORKSPACE]) == 0.0
        assert await store.write_windows.reserve_writes([other, WORKSPACE]) > 0
        fifth = WriteWindow(other.key, capacity=5, seconds=5.0)
        assert await store.write_windows.reserve_writes([fifth]) == 0.0
        assert await store.write_windows.reserve_writes([fifth]) > 0


async def test_spacing_paces_writes_across_processes(url: str) -> None:
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as first,
        await PostgresStore.open(url, clock=clock) as second,
    ):
        assert await first.write_windows.reserve_writes([CHANNEL], spacing=1.0) == 0.0
        clock.advance(0.25)
        assert await second.write_windows.reserve_writes([CHANNEL], spacing=1.0) == pytest.approx(
            0.75
        )
        clock.advance(0.75)
        assert await second.write_windows.reserve_writes([CHANNEL], spacing=1.0) == 0.0


async def test_a_write_that_waits_for_its_turn_is_booked_for_it(url: str) -> None:
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as first,
        await PostgresStore.open(url, clock=clock) as second,
    ):

        async def booked(
            store: PostgresStore, *, spacing: float = 0.0, within: float = 0.0
        ) -> tuple[float, bool]:
            booking = await store.write_windows.book_writes(
                [CHANNEL], spacing=spacing, within=within
            )
            return round(booking.wait, 6), booking.counted

        assert await booked(first, spacing=1.0) == (0.0, True)
        assert await booked(second, spacing=1.0, within=2.0) == (1.0, True)
        assert await booked(first, spacing=1.0, within=1.5) == (2.0, False), (
            "spaced after the booked write; too far ahead to book"
        )
        assert await booked(first, spacing=1.0, within=2.0) == (2.0, True)
        full = CHANNEL.seconds + ALLOWANCE
        assert await booked(second, within=10.0) == (full, True), (
            "booked for when the first write stops counting"
        )
        assert await second.write_windows.reserve_writes([CHANNEL]) == pytest.approx(full + 1.0)
        clock.advance(full)
        assert await second.write_windows.reserve_writes([CHANNEL]) == pytest.approx(1.0)


async def test_a_write_not_booked_for_room_is_booked_for_its_spacing_alone(url: str) -> None:
    """A write asked without ``for_room`` (a progress edit, which leaves a share of its windows
    free) is booked for its spacing while the window has room for it now, and turned away, not
    counted, once the window is full (booked for room, its row would count from now and take
    that room at once). Such writes were never booked: turned away for their spacing, three
    processes' progress edits each asked again at the moment told, 2.3 reservations an edit."""
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as first,
        await PostgresStore.open(url, clock=clock) as second,
    ):

        async def booked(store: PostgresStore) -> tuple[float, bool]:
            booking = await store.write_windows.book_writes(
                [CHANNEL], spacing=1.0, within=10.0, for_room=False
            )
            return round(booking.wait, 6), booking.counted

        assert await booked(first) == (0.0, True)
        assert await booked(second) == (1.0, True), "booked for its spacing: the window has room"
        assert await booked(first) == (2.0, True)
        full = CHANNEL.seconds + ALLOWANCE
        assert await booked(second) == (full, False), "not booked for room: the window is full"


async def test_reservations_asked_together_share_one_transaction(url: str) -> None:
    clock = ManualClock()
    async with await PostgresStore.open(url, clock=clock) as store:
        channels = [WriteWindow(f"web/web/c{n}", capacity=1, seconds=1.0) for n in range(10)]
        trips = counted(store).trips
        answers = await asyncio.gather(*(store.write_windows.reserve_writes([c]) for c in channels))
        assert answers == [0.0] * 10
        assert len(trips) <= 2
        answers = await asyncio.gather(*(store.write_windows.reserve_writes([c]) for c in channels))
        assert answers == [pytest.approx(1.0 + ALLOWANCE)] * 10
        assert len(trips) <= 4


async def test_reservations_asked_a_moment_apart_gather_in_one_transaction(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writers ask as their tasks wake, a moment apart: the first reservation waits for the
    others (each write waits for its window anyway) instead of running alone."""
    monkeypatch.setattr(write_windows, "GATHER", LONG_GATHER)
    clock = ManualClock()
    async with await PostgresStore.open(url, clock=clock) as store:
        trips = counted(store).trips

        async def reserve_after(turns: int, n: int) -> float:
            await after_turns(turns)
            channel = WriteWindow(f"web/web/c{n}", capacity=1, seconds=1.0)
            return await store.write_windows.reserve_writes([channel])

        assert await asyncio.gather(*(reserve_after(2 * n, n) for n in (1, 2, 3))) == [0.0] * 3
        assert len(trips) == 1


async def test_reservations_together_are_judged_after_the_ones_before_them(url: str) -> None:
    clock = ManualClock()
    async with await PostgresStore.open(url, clock=clock) as store:
        answers = await asyncio.gather(
            *(store.write_windows.reserve_writes([CHANNEL]) for _ in range(5))
        )
        assert answers[:3] == [0.0, 0.0, 0.0]
        assert answers[3:] == [pytest.approx(CHANNEL.seconds + ALLOWANCE)] * 2
        clock.advance(CHANNEL.seconds + ALLOWANCE)
        spaced = await asyncio.gather(
            *(store.write_windows.reserve_writes([CHANNEL], spacing=1.0) for _ in range(2))
        )
        assert spaced == [0.0, pytest.approx(1.0)]


async def test_writes_turned_away_from_a_full_window_read_when_it_frees_once(url: str) -> None:
    """Three processes' results filled a channel's window and each asked for more: every write
    turned away got its wait from the one read of the window its transaction made with its
    locks, not from a read of its own inside the transaction that holds the window's lock."""
    clock = ManualClock()
    async with await PostgresStore.open(url, clock=clock) as store:
        for _ in range(CHANNEL.capacity):
            assert await store.write_windows.reserve_writes([CHANNEL]) == 0.0
        clock.advance(1.0)
        trips = counted(store).trips
        answers = await asyncio.gather(
            *(store.write_windows.reserve_writes([CHANNEL]) for _ in range(5))
        )
        assert answers == [pytest.approx(CHANNEL.seconds + ALLOWANCE - 1.0)] * 5
        assert [trip.sends for trip in trips] == [1] * len(trips), "one read, nothing counted"
        assert len(trips) < 5


async def test_a_reservation_sends_its_locks_finishes_and_read_together_then_its_writes(
    url: str,
) -> None:
    """A reservation's transaction holds its windows' locks from its first round trip to its
    commit, while other processes writing into the same channels wait for them: the locks, the
    finishes and give-backs told since the last one and the read of every window go in one
    round trip, the writes it counts in a second, however many windows are full."""
    clock = ManualClock()
    async with await PostgresStore.open(url, clock=clock) as store:
        windows = [WriteWindow(f"discord/g1/f{n}", capacity=2, seconds=5.0) for n in range(3)]
        slots = [(await store.write_windows.book_writes([w])).slot for w in windows for _ in "ab"]
        single = WriteWindow("discord/g1/single", capacity=1, seconds=5.0)
        booked = await store.write_windows.book_writes([single])
        clock.advance(0.1)
        for slot in slots[:-1]:
            assert slot is not None
            store.write_windows.finished(slot)
        assert slots[-1] is not None and booked.slot is not None
        store.write_windows.given_back(booked.slot)
        trips = counted(store).trips
        answers = await asyncio.gather(
            *(store.write_windows.book_writes([w], within=10.0) for w in [*windows, single])
        )

        assert [a.counted for a in answers] == [True] * 4
        assert [round(a.wait, 6) for a in answers] == [5.0, 5.0, 5.0, 0.0], "room given back"
        assert len(trips) == 1, "asked together"
        statements = [sql for sql, _ in trips[0].statements]
        assert statements.count(SQL_FINISHED) == 5 and statements.count(SQL_GIVEN_BACK) == 1
        assert statements.count(SQL_SPEND) == 4
        assert trips[0].sends == 2


async def test_a_reservation_that_prunes_sends_the_prune_with_its_writes(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Now and then a reservation deletes the rows that stopped counting: in the round trip of
    its writes, not in a third one while it holds its windows' locks."""
    monkeypatch.setattr(write_windows, "PRUNE_EVERY", 2)
    clock = ManualClock()
    async with await PostgresStore.open(url, clock=clock) as store:
        expired = WriteWindow("discord/g1/c8", capacity=1, seconds=1.0)
        assert await store.write_windows.reserve_writes([expired]) == 0.0
        clock.advance(expired.seconds + ALLOWANCE + 1.0)
        trips = counted(store).trips
        assert await store.write_windows.reserve_writes([CHANNEL]) == 0.0

        statements = [sql for sql, _ in trips[0].statements]
        assert statements.count(SQL_PRUNE) == 1 and statements.count(SQL_SPEND) == 1
        assert trips[0].sends == 2
        left = await store.db.fetch_all("SELECT key FROM write_slots")
        assert [row["key"] for row in left] == [CHANNEL.key], "the expired row was deleted"


async def test_a_finished_write_counts_from_its_finish_once_its_writer_asks_again(
    url: str,
) -> None:
    """A write whose call returned 0.1 s after its grant counts for its window's length from
    then, not for the window plus the allowance from its grant; the finish goes in its writer's
    next reservation, without a transaction of its own."""
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        elsewhere = WriteWindow("discord/g1/c2", capacity=3, seconds=5.0)
        slots = [(await ours.write_windows.book_writes([CHANNEL])).slot for _ in range(3)]
        clock.advance(0.1)
        trips = counted(ours).trips
        for slot in slots:
            assert slot is not None
            ours.write_windows.finished(slot)
            ours.write_windows.finished(slot)
        assert trips == [], "told with the next reservation"
        assert await other.write_windows.reserve_writes([CHANNEL]) == pytest.approx(
            CHANNEL.seconds + ALLOWANCE - 0.1
        ), "not told yet: counted from the grant"

        assert await ours.write_windows.reserve_writes([elsewhere]) == 0.0
        assert len(trips) == 1

        assert await other.write_windows.reserve_writes([CHANNEL]) == pytest.approx(
            CHANNEL.seconds
        ), "counted from the finish"


async def test_a_write_whose_call_outlasts_the_allowance_counts_until_its_finish(
    url: str,
) -> None:
    clock = ManualClock()
    async with await PostgresStore.open(url, clock=clock) as store:
        one = WriteWindow("discord/g1/c3", capacity=1, seconds=1.0)
        slot = (await store.write_windows.book_writes([one])).slot
        assert slot is not None
        clock.advance(1.4)
        store.write_windows.finished(slot)
        assert await store.write_windows.reserve_writes([one]) == pytest.approx(one.seconds)


async def test_a_write_in_a_window_not_held_counts_its_window_from_its_grant(url: str) -> None:
    """Where the platform counts no write itself, a write counts for exactly its window from
    its grant: no allowance for the request, and its finish tells nothing (it would make it
    count from then)."""
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        advertised = WriteWindow("web/web/c1", capacity=1, seconds=1.0, held=False)
        slot = (await ours.write_windows.book_writes([advertised])).slot
        assert slot is not None
        clock.advance(0.3)
        ours.write_windows.finished(slot)
        trips = counted(ours).trips
        assert await ours.write_windows.reserve_writes([CHANNEL]) == 0.0

        assert SQL_FINISHED not in [sql for sql, _ in trips[0].statements]
        assert await other.write_windows.reserve_writes([advertised]) == pytest.approx(0.7)


async def test_a_booked_write_given_back_stops_counting_though_its_writer_asks_nothing_more(
    url: str,
) -> None:
    """A write booked for its turn and then not made is deleted, not finished (a finish would
    count it a whole window from then): it leaves the room it had taken, its spacing included.
    Its process asking for nothing more (its writer was cancelled, nothing else writes), the
    give-back goes in a small transaction of its own: told only in a next reservation, it
    counted until its end while other processes waited for its room."""
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        assert await other.write_windows.reserve_writes([CHANNEL]) == 0.0
        booking = await ours.write_windows.book_writes([CHANNEL], spacing=1.0, within=2.0)
        assert booking.counted and booking.slot is not None
        assert await other.write_windows.reserve_writes([CHANNEL], spacing=1.0) == pytest.approx(
            2.0
        ), "spaced after the booked write"
        counting = counted(ours)
        ours.write_windows.given_back(booking.slot)
        ours.write_windows.given_back(booking.slot)
        ours.write_windows.finished(booking.slot)
        async with asyncio.timeout(5):
            await counting.committed.wait()

        assert [sql for sql, _ in counting.trips[0].statements] == [SQL_GIVEN_BACK]
        assert counting.trips[0].sends == 1, "the delete alone: no lock, no read"
        assert await other.write_windows.reserve_writes([CHANNEL], spacing=1.0) == pytest.approx(
            1.0
        ), "spaced after the first write only"
        two = WriteWindow(CHANNEL.key, capacity=2, seconds=CHANNEL.seconds)
        clock.advance(1.0)
        assert await other.write_windows.reserve_writes([two]) == 0.0, "room for a second write"
        assert len(counting.trips) == 1


async def test_a_write_given_back_amid_reservations_goes_in_their_transactions(url: str) -> None:
    """A give-back makes no transaction of its own while its process asks for reservations:
    told as they gather, it goes in theirs; told while one runs, in the next one, with the
    reservations asked meanwhile — as many transactions as the reservations alone."""
    clock = ManualClock()
    async with await PostgresStore.open(url, clock=clock) as store:
        windows = [WriteWindow(f"discord/g1/b{n}", capacity=1, seconds=5.0) for n in range(4)]
        first = [await store.write_windows.book_writes([w]) for w in windows]
        slots = [booking.slot for booking in first if booking.slot is not None]
        assert len(slots) == 4
        full = CHANNEL.seconds + ALLOWANCE
        counting = counted(store)

        store.write_windows.given_back(slots[0])
        gathered = await asyncio.gather(
            *(store.write_windows.book_writes([w], within=10.0) for w in windows[:2])
        )
        assert [round(b.wait, 6) for b in gathered] == [0.0, full], "the first's room given back"
        assert len(counting.trips) == 1

        counting.began.clear()
        running = asyncio.ensure_future(store.write_windows.reserve_writes([windows[2]]))
        async with asyncio.timeout(5):
            await counting.began.wait()
        store.write_windows.given_back(slots[3])
        asked = asyncio.ensure_future(store.write_windows.book_writes([windows[3]]))
        assert await running == pytest.approx(full)
        booking = await asked

        assert booking.counted and booking.wait == 0.0, "the give-back went before it"
        assert len(counting.trips) == 3
        assert SQL_GIVEN_BACK in [sql for sql, _ in counting.trips[2].statements]


async def test_a_give_back_carried_by_a_reservation_leaves_no_transaction_for_finishes_alone(
    url: str,
) -> None:
    """A writer cancelled while its reservation ran gives its slot back, and the reservation
    asked meanwhile carries it. The transaction the give-back asked for then finds only a
    finish told since: it makes no transaction (a finish has none of its own; a burst with one
    cancelled writer would gain one), and the finish goes in the next reservation."""
    clock = ManualClock()
    async with await PostgresStore.open(url, clock=clock) as store:
        windows = [WriteWindow(f"discord/g1/t{n}", capacity=5, seconds=5.0) for n in range(3)]
        done = (await store.write_windows.book_writes([windows[0]])).slot
        assert done is not None
        counting = counted(store)
        cancelled = asyncio.ensure_future(store.write_windows.book_writes([windows[1]]))
        async with asyncio.timeout(5):
            await counting.began.wait()
        asked = asyncio.ensure_future(store.write_windows.book_writes([windows[2]]))
        await after_turns(1)
        cancelled.cancel()
        counting.began.clear()
        async with asyncio.timeout(5):
            await counting.began.wait()
        store.write_windows.finished(done)
        assert (await asked).counted
        await store.write_windows.tell_given_back()

        trips = [[sql for sql, _ in trip.statements] for trip in counting.trips]
        assert len(trips) == 2, trips
        assert SQL_GIVEN_BACK in trips[1] and SQL_FINISHED not in trips[1]
        assert await store.write_windows.reserve_writes([windows[1]]) == 0.0
        assert SQL_FINISHED in [sql for sql, _ in counting.trips[2].statements]


async def test_reservations_asked_together_are_judged_in_rank_order(url: str) -> None:
    """Of the reservations asked while one is under way, those ranked first (a result before a
    progress edit, whichever asked first; a reservation of no rank last) take the room there
    is; the answers come back to their askers."""
    clock = ManualClock()
    async with await PostgresStore.open(url, clock=clock) as store:
        two = WriteWindow("discord/g1/c9", capacity=2, seconds=5.0)
        assert await store.write_windows.reserve_writes([two]) == 0.0
        answers = await asyncio.gather(
            store.write_windows.book_writes([two]),
            store.write_windows.book_writes([two], rank=(2, 0.0, 0)),
            store.write_windows.book_writes([two], rank=(0, 0.0, 1)),
        )
        assert [a.counted for a in answers] == [False, False, True]
        assert answers[2].wait == 0.0


async def test_finishes_and_give_backs_of_a_failed_reservation_go_in_the_next(url: str) -> None:
    """The reservation that was to tell a finish and a give-back lost its connection while it
    waited for a lock: they are told in the next one, not lost (the finished write would keep
    its first end, the one given back would count until it expires)."""
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        done, unused = (WriteWindow(f"discord/g1/c{n}", capacity=1, seconds=5.0) for n in (5, 6))
        elsewhere = WriteWindow("discord/g1/c7", capacity=3, seconds=5.0)
        finished = (await ours.write_windows.book_writes([done])).slot
        given_back = (await ours.write_windows.book_writes([unused])).slot
        assert finished is not None and given_back is not None
        clock.advance(0.1)
        lock = ours.db.dialect.transaction_lock
        assert lock is not None
        key = f"genbot.writes.{elsewhere.key}"
        holding, release = asyncio.Event(), asyncio.Event()

        async def hold(tx: Session) -> None:
            await tx.execute(lock, (key,))
            holding.set()
            await release.wait()

        held = asyncio.create_task(other.db.transaction(hold))
        await holding.wait()
        ours.write_windows.finished(finished)
        ours.write_windows.given_back(given_back)
        failing = asyncio.create_task(ours.write_windows.reserve_writes([elsewhere]))
        await until_waiting_for_lock(url, key)
        await terminate_lock_waiters(url, key)
        with pytest.raises(StorageError):
            await failing
        release.set()
        await held

        assert await ours.write_windows.reserve_writes([elsewhere]) == 0.0
        assert await other.write_windows.reserve_writes([done]) == pytest.approx(done.seconds), (
            "counted from the finish"
        )
        assert await other.write_windows.reserve_writes([unused]) == 0.0, "given back"


async def test_a_give_back_whose_connection_was_lost_is_told_again_at_once(url: str) -> None:
    """The transaction telling a give-back alone lost its connection (a stale one, a server
    restart): telling it twice changes nothing, so it runs again on a fresh connection (once)
    rather than leaving the row counting until a next reservation that may never come."""
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        one = WriteWindow("discord/g1/r1", capacity=1, seconds=5.0)
        slot = (await ours.write_windows.book_writes([one])).slot
        assert slot is not None
        counting = counted(ours)
        async with holding(other.db, "LOCK TABLE write_slots IN SHARE MODE"):
            ours.write_windows.given_back(slot)
            await until_waiting_for_table(url, "write_slots")
            assert await terminate_table_waiters(url, "write_slots") == 1
        async with asyncio.timeout(5):
            await counting.committed.wait()

        assert await other.write_windows.reserve_writes([one]) == 0.0
        assert len(counting.trips) == 1


async def test_a_give_back_whose_transaction_failed_otherwise_is_logged_and_told_next(
    url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the transaction telling a give-back alone raises is logged, not left in a task
    nobody awaits, and the give-back goes in the next reservation."""
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        one = WriteWindow("discord/g1/r2", capacity=1, seconds=5.0)
        slot = (await ours.write_windows.book_writes([one])).slot
        assert slot is not None
        counting = counted(ours)

        async def broken(*_: object, **__: object) -> None:
            raise RuntimeError("broken")

        monkeypatch.setattr(counting, "transaction", broken)
        ours.write_windows.given_back(slot)
        await ours.write_windows.tell_given_back()
        assert "write slots given back not told" in caplog.text
        monkeypatch.undo()

        assert await ours.write_windows.reserve_writes([CHANNEL]) == 0.0
        assert SQL_GIVEN_BACK in [sql for sql, _ in counting.trips[0].statements]
        assert await other.write_windows.reserve_writes([one]) == 0.0


async def test_a_store_closing_tells_its_give_backs_first(url: str) -> None:
    """A write given back just before its process stops (its writer cancelled at shutdown) is
    told before the database closes; else its row counts to its end for the other processes."""
    clock = ManualClock()
    async with await PostgresStore.open(url, clock=clock) as other:
        ours = await PostgresStore.open(url, clock=clock)
        one = WriteWindow("discord/g1/r3", capacity=1, seconds=5.0)
        slot = (await ours.write_windows.book_writes([one])).slot
        assert slot is not None
        ours.write_windows.given_back(slot)
        await ours.close()

        assert await other.write_windows.reserve_writes([one]) == 0.0


async def test_a_reservation_whose_writer_was_cancelled_while_it_ran_is_given_back(
    url: str,
) -> None:
    """A writer cancelled while its reservation's transaction runs never learns its slot, so
    the windows give it back themselves: in the reservation asked next, here (with none
    asked, in a transaction of its own)."""
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        one = WriteWindow("discord/g1/c4", capacity=1, seconds=5.0)
        counting = counted(ours)
        trips = counting.trips
        asking = asyncio.ensure_future(ours.write_windows.book_writes([one]))
        async with asyncio.timeout(5):
            await counting.began.wait()
        asking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asking
        assert await ours.write_windows.reserve_writes([CHANNEL]) == 0.0

        assert [sql for sql, _ in trips[0].statements].count(SQL_SPEND) == 1, "it was counted"
        assert SQL_GIVEN_BACK in [sql for sql, _ in trips[1].statements]
        assert await other.write_windows.reserve_writes([one]) == 0.0


async def test_a_bookings_wait_counts_from_its_answer_not_from_the_ask(url: str) -> None:
    """A reservation that took 0.3 s (held behind another process's, here) answers the wait
    left from its return: the writer, which waits from then, goes at the moment booked rather
    than the reservation's time after it (every booked write of a busy burst went late)."""
    clock = ManualClock()
    async with (
        await PostgresStore.open(url, clock=clock) as ours,
        await PostgresStore.open(url, clock=clock) as other,
    ):
        full = WriteWindow(CHANNEL.key, capacity=1, seconds=1.0)
        assert await ours.write_windows.reserve_writes([full]) == 0.0
        clock.advance(0.5)
        lock = ours.db.dialect.transaction_lock
        assert lock is not None
        holding, release = asyncio.Event(), asyncio.Event()

        async def hold(tx: Session) -> None:
            await tx.execute(lock, (f"genbot.writes.{full.key}",))
            holding.set()
            await release.wait()

        held = asyncio.create_task(other.db.transaction(hold))
        await holding.wait()
        asking = asyncio.create_task(ours.write_windows.book_writes([full], within=1.0))
        await asyncio.sleep(0.2)
        clock.advance(0.3)
        release.set()
        booking = await asking
        await held

        assert booking.counted
        assert booking.wait == pytest.approx(1.0 + ALLOWANCE - 0.5 - 0.3)
