"""The playground's history in the storage: messages per channel, images once, pending
commands, the session key; bounded per channel."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import psycopg
import pytest

from storage import PlaygroundImage, PlaygroundMessage, ProcessInfo, Store
from storage.postgres import PostgresStore
from storage.queries import playground as playground_queries
from storage.queries.playground import SQL_IMAGES_ONLY_OF, SQL_SWEEP_IMAGES, SQL_SWEEP_UNSHOWN
from storage.sql.dialect import text_inside
from storage.sql.session import Session
from tests.postgres import PostgresCluster
from tests.storage.conftest import Database, ManualClock, PostgresSchema
from tests.storage.counting import counted
from tests.storage.helpers import (
    LONG_GATHER,
    after_turns,
    holding,
    until_waiting_for_table,
    until_waiting_in,
)


def image(key: str) -> PlaygroundImage:
    return PlaygroundImage(key, f"{key}.png", "image/png", 2, 3, key.encode() * 3)


def message(
    message_id: str, channel: str = "general", keys: tuple[str, ...] = (), pending: bool = False
) -> PlaygroundMessage:
    return PlaygroundMessage(message_id, channel, pending, keys, {"id": message_id, "n": [1, 2]})


async def test_messages_and_images_come_back_per_channel(store: Store) -> None:
    await store.playground.save_playground_message(
        message("a", keys=("k1",)), [image("k1")], keep=10
    )
    await store.playground.save_playground_message(
        message("b", "random", ("k1",)), [image("k1")], keep=10
    )
    await store.playground.save_playground_message(message("c", pending=True), [], keep=10)
    messages, images = await store.playground.load_playground(keep=10)
    assert [(m.id, m.channel, m.pending, m.image_keys) for m in messages] == [
        ("a", "general", False, ("k1",)),
        ("b", "random", False, ("k1",)),
        ("c", "general", True, ()),
    ]
    assert messages[0].body == {"id": "a", "n": [1, 2]}
    assert images == [image("k1")]
    await store.playground.settle_playground_message("c")
    found = await store.playground.playground_message("c")
    assert found is not None and not found[0].pending
    assert await store.playground.playground_message("nope") is None


async def test_messages_asked_together_are_read_in_one_statement(store: Store) -> None:
    for n in range(3):
        await store.playground.save_playground_message(message(f"m{n}", keys=("k",)), [], keep=10)
    await store.playground.save_playground_message(message("m1"), [], keep=10)
    trips = counted(store).trips
    found = await store.playground.playground_messages(["m2", "gone", "m0", "m1"])
    assert len(trips) == 1
    assert sorted((m.id, m.image_keys, m.version) for m in found) == [
        ("m0", ("k",), 1),
        ("m1", (), 2),
        ("m2", ("k",), 1),
    ]
    assert await store.playground.playground_messages([]) == []


async def test_a_channels_latest_messages_are_read_alone_in_one_statement(store: Store) -> None:
    for message_id, channel in (("a", "general"), ("b", "general"), ("c", "random")):
        await store.playground.save_playground_message(message(message_id, channel), [], keep=10)
    await store.playground.save_playground_message(message("d", keys=("k",)), [image("k")], keep=10)
    trips = counted(store).trips

    latest = await store.playground.playground_channel("general", keep=2)

    assert [(m.id, m.channel, m.image_keys) for m in latest] == [
        ("b", "general", ()),
        ("d", "general", ("k",)),
    ]
    assert len(trips) == 1
    assert await store.playground.playground_channel("lab", keep=2) == []


async def test_a_message_is_found_by_its_key_in_its_channel_and_thread(store: Store) -> None:
    def keyed(
        message_id: str, channel: str, thread: str | None, key: str | None
    ) -> PlaygroundMessage:
        body = {"id": message_id, "thread": thread, "key": key}
        return PlaygroundMessage(message_id, channel, False, (), body)

    for saved in (
        keyed("a", "general", None, "job1.result"),
        keyed("b", "general", "t1", "job1.result"),
        keyed("c", "random", None, "job1.result"),
        keyed("d", "general", None, None),
    ):
        await store.playground.save_playground_message(saved, [], keep=10)

    def found_id(found: PlaygroundMessage | None) -> str | None:
        return None if found is None else found.id

    playground = store.playground
    assert found_id(await playground.playground_keyed("general", None, "job1.result")) == "a"
    assert found_id(await playground.playground_keyed("general", "t1", "job1.result")) == "b"
    assert found_id(await playground.playground_keyed("random", None, "job1.result")) == "c"
    assert await playground.playground_keyed("general", "t2", "job1.result") is None
    assert await playground.playground_keyed("general", None, "job2.result") is None


async def test_a_saved_message_replaces_itself_and_counts_its_versions(store: Store) -> None:
    assert (
        await store.playground.save_playground_message(
            message("a", keys=("k1",)), [image("k1")], keep=10
        )
        == 1
    )
    edited = PlaygroundMessage("a", "general", False, ("k2",), {"text": "edited"})
    assert await store.playground.save_playground_message(edited, [image("k2")], keep=10) == 2
    found = await store.playground.playground_message("a")
    assert found == (replace(edited, version=2), [image("k2")])
    messages, _ = await store.playground.load_playground(keep=10)
    assert [m.version for m in messages] == [2]


async def test_pending_commands_are_claimed_by_one_live_process_only(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    accepted = {"id": "c", "created": clock.now - 30}
    await store.playground.save_playground_message(
        PlaygroundMessage("c", "general", True, (), accepted), [], keep=10
    )
    await store.leasing.heartbeat(ProcessInfo("h", 1, ("web",), clock.now))
    shared = isinstance(store, PostgresStore)
    assert await other_store.playground.claim_pending_commands(clock.now - 60) == []
    if shared:
        assert await other_store.playground.claim_pending_commands(clock.now) == [], (
            "its owner is alive"
        )
        clock.advance(store.owner.lease_seconds * 1.5)
        assert await other_store.playground.claim_pending_commands(clock.now) == [], (
            "a stall's silence"
        )
        clock.advance(store.owner.lease_seconds)
    assert await other_store.playground.claim_pending_commands(clock.now) == ["c"]
    await other_store.leasing.heartbeat(ProcessInfo("h", 2, ("web",), clock.now))
    assert await store.playground.claim_pending_commands(clock.now) == ([] if shared else ["c"])
    assert await other_store.playground.claim_pending_commands(clock.now) == ["c"], (
        "its own, not settled"
    )
    await other_store.playground.settle_playground_message("c")
    assert await other_store.playground.claim_pending_commands(clock.now) == []


async def test_each_channel_keeps_its_latest_messages_and_their_images(store: Store) -> None:
    for n in range(5):
        await store.playground.save_playground_message(
            message(f"m{n}", keys=(f"k{n}",)), [image(f"k{n}")], keep=3
        )
    await store.playground.save_playground_message(message("other", "random"), [], keep=3)
    messages, images = await store.playground.load_playground(keep=3)
    assert [m.id for m in messages] == ["m2", "m3", "m4", "other"]
    assert sorted(i.key for i in images) == ["k2", "k3", "k4"]


async def test_the_session_key_is_made_once_and_shared(store: Store, other_store: Store) -> None:
    key = await store.playground.playground_session_key()
    assert len(key) == 32
    assert await other_store.playground.playground_session_key() == key


async def test_one_image_is_read_on_demand(store: Store) -> None:
    await store.playground.save_playground_message(
        message("a", keys=("k1",)), [image("k1")], keep=10
    )
    assert await store.playground.playground_image("k1") == image("k1")
    assert await store.playground.playground_image("k2") is None


async def test_loading_reads_only_the_newest_images_that_fit(store: Store) -> None:
    for n in range(5):
        await store.playground.save_playground_message(
            message(f"m{n}", keys=(f"k{n}",)), [image(f"k{n}")], keep=10
        )
    size = len(image("k0").data)

    messages, images = await store.playground.load_playground(keep=10, max_image_bytes=2 * size + 1)

    assert [m.id for m in messages] == ["m0", "m1", "m2", "m3", "m4"]
    assert [i.key for i in images] == ["k3", "k4"]
    assert await store.playground.playground_image("k0") == image("k0")
    _, everything = await store.playground.load_playground(keep=10)
    assert [i.key for i in everything] == ["k0", "k1", "k2", "k3", "k4"]


async def test_saving_an_answer_marks_its_command_handled(store: Store) -> None:
    await store.playground.save_playground_message(message("c", pending=True), [], keep=10)
    await store.playground.save_playground_message(message("other", pending=True), [], keep=10)
    answer = PlaygroundMessage("a", "general", False, (), {"id": "a"}, answers="c")
    await store.playground.save_playground_message(answer, [], keep=10)

    messages, _ = await store.playground.load_playground(keep=10)
    assert {m.id: m.pending for m in messages} == {"c": False, "other": True, "a": False}


async def test_a_process_that_claims_before_its_first_heartbeat_keeps_what_it_claimed(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    accepted = {"id": "c", "created": clock.now - 30}
    await store.playground.save_playground_message(
        PlaygroundMessage("c", "general", True, (), accepted), [], keep=10
    )
    clock.advance(2 * store.owner.lease_seconds + 1)
    assert await other_store.playground.claim_pending_commands(clock.now) == ["c"]
    if isinstance(store, PostgresStore):
        await store.leasing.heartbeat(ProcessInfo("h", 1, ("web",), clock.now))
        assert await store.playground.claim_pending_commands(clock.now) == [], (
            "its claimer is alive"
        )


async def test_a_released_process_claims_nothing_until_its_heartbeat_beats_again(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    """A claim after a clean stop's release (a sweep still under way while genbot stops) took
    the commands for the stopping process and wrote its ``processes`` row again: the others
    took it for alive and left what it had claimed for ``OWNER_SILENCE_LEASES`` leases."""
    for command in ("c", "d"):
        accepted = {"id": command, "created": clock.now - 30}
        await store.playground.save_playground_message(
            PlaygroundMessage(command, "general", True, (), accepted), [], keep=10
        )
    await store.leasing.heartbeat(ProcessInfo("h", 1, ("web",), clock.now))
    await store.leasing.release_leases()

    assert await store.playground.claim_pending_commands(clock.now) == []
    alive = await store.db.fetch_all("SELECT id FROM processes")
    assert [row["id"] for row in alive] == []
    assert sorted(await other_store.playground.claim_pending_commands(clock.now)) == ["c", "d"]
    await store.leasing.heartbeat(ProcessInfo("h", 1, ("web",), clock.now))
    await other_store.playground.settle_playground_message("c")
    clock.advance(2 * store.owner.lease_seconds + 1)
    assert await store.playground.claim_pending_commands(clock.now) == ["d"], "started again"


async def test_a_release_waits_for_a_claim_under_way_that_wrote_the_processes_row_first(
    database: Database, store: Store, other_store: Store, clock: ManualClock
) -> None:
    """A release that found no ``processes`` row (no heartbeat had committed yet) deleted
    nothing and did not wait for a claim whose uncommitted insert had written it: the claim
    then committed the row, and the stopping process looked alive for
    ``OWNER_SILENCE_LEASES`` leases."""
    if not isinstance(database, PostgresSchema):
        pytest.skip("SQLite runs one write transaction at a time")
    accepted = {"id": "c", "created": clock.now - 30}
    await store.playground.save_playground_message(
        PlaygroundMessage("c", "general", True, (), accepted), [], keep=10
    )
    async with holding(other_store.db, "LOCK TABLE playground_messages IN ACCESS EXCLUSIVE MODE"):
        claim = asyncio.create_task(store.playground.claim_pending_commands(clock.now))
        await until_waiting_for_table(database.url, "playground_messages")
        release = asyncio.create_task(store.leasing.release_leases())
        waiting = asyncio.create_task(until_waiting_in(database.url, "INSERT INTO processes"))
        await asyncio.wait((release, waiting), return_when=asyncio.FIRST_COMPLETED)
        if waiting.done():
            waiting.result()
        waiting.cancel()
    assert await claim == ["c"]
    await release
    alive = await store.db.fetch_all("SELECT id FROM processes")
    assert [row["id"] for row in alive] == []


async def test_a_command_another_claimer_holds_is_skipped_not_waited_for(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    """A claim that waited for another claimer's transaction re-checked the command against
    its own snapshot, where that claimer was not yet alive, and took it too (two answers)."""
    if not isinstance(store, PostgresStore):
        pytest.skip("SQLite runs one write transaction at a time")
    accepted = {"id": "c", "created": clock.now - 30}
    await store.playground.save_playground_message(
        PlaygroundMessage("c", "general", True, (), accepted), [], keep=10
    )
    holding, release = asyncio.Event(), asyncio.Event()

    async def hold(tx: Session) -> None:
        await tx.execute("SELECT id FROM playground_messages WHERE id = ? FOR UPDATE", ("c",))
        holding.set()
        await release.wait()

    held = asyncio.create_task(store.db.transaction(hold))
    await holding.wait()
    try:
        async with asyncio.timeout(5):
            assert await other_store.playground.claim_pending_commands(clock.now) == []
    finally:
        release.set()
        await held
    assert await other_store.playground.claim_pending_commands(clock.now) == ["c"]


async def test_processes_saving_into_a_channel_take_turns_on_its_lock(
    store: Store, other_store: Store
) -> None:
    """Two processes' saves trimmed the channels of their batches in different orders and
    deadlocked (a command answered "can't reach its database"): a save now first locks its
    channels, in name order, for its transaction."""
    if not isinstance(store, PostgresStore):
        pytest.skip("SQLite runs one write transaction at a time")
    lock = store.db.dialect.transaction_lock
    assert lock is not None
    holding, release = asyncio.Event(), asyncio.Event()

    async def hold(tx: Session) -> None:
        await tx.execute(lock, ("genbot_playground.general",))
        holding.set()
        await release.wait()

    held = asyncio.create_task(store.db.transaction(hold))
    await holding.wait()
    saving = asyncio.gather(
        other_store.playground.save_playground_message(message("m1", "lab"), [], keep=3),
        other_store.playground.save_playground_message(message("m2"), [], keep=3),
    )
    waiting = "SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    try:
        async with asyncio.timeout(10):
            while not (await store.db.fetch_one(waiting) or {"n": 0})["n"]:
                assert not saving.done(), "the save did not wait for its channel's lock"
                await asyncio.sleep(0.01)
    finally:
        release.set()
        await held
    assert list(await saving) == [1, 1]


async def test_saves_asked_together_share_one_transaction_and_keep_their_order(
    store: Store, other_store: Store
) -> None:
    updates = aiter(other_store.playground.playground_updates())
    assert await anext(updates) is None
    trips = counted(store).trips
    versions = await asyncio.gather(
        *(store.playground.save_playground_message(message(f"m{n}"), [], keep=3) for n in range(5)),
        store.playground.save_playground_message(message("m4"), [], keep=3),
    )
    assert versions == [1, 1, 1, 1, 1, 2]
    assert len(trips) <= 2
    messages, _ = await store.playground.load_playground(keep=10)
    assert [m.id for m in messages] == ["m2", "m3", "m4"]
    await store.playground.save_playground_message(message("m4"), [], keep=3)
    assert not any(sql.startswith("DELETE") for sql, _ in trips[-1].statements), "no new message"
    if isinstance(store, PostgresStore):
        heard = [await asyncio.wait_for(anext(updates), 10) for _ in range(6)]
        ids = [update[0] if update else None for update in heard]
        assert ids == ["m0", "m1", "m2", "m3", "m4", "m4"], "alike notices of a commit: once"


async def test_saves_asked_a_moment_apart_gather_in_one_transaction(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each writer's save comes as its task wakes, a moment after the last: the first waits for
    them (the playground is a platform whose writes are paced in windows of a second) instead
    of running alone."""
    monkeypatch.setattr(playground_queries, "GATHER", LONG_GATHER)
    trips = counted(store).trips

    async def save_after(turns: int, n: int) -> int:
        await after_turns(turns)
        return await store.playground.save_playground_message(message(f"m{n}"), [], keep=10)

    assert await asyncio.gather(*(save_after(2 * n, n) for n in (1, 2, 3))) == [1, 1, 1]
    assert len(trips) == 1


async def test_a_save_tells_the_other_processes_its_id_and_its_notice_as_it_was(
    store: Store, other_store: Store
) -> None:
    if not isinstance(store, PostgresStore):
        pytest.skip("SQLite sends no notices")
    updates = aiter(other_store.playground.playground_updates())
    assert await anext(updates) is None
    told = '{"channel": "lab", "news": true}'
    await store.playground.save_playground_message(
        replace(message("m1", "lab"), notice=told), [], keep=3
    )
    await store.playground.save_playground_message(message("m2"), [], keep=3)
    heard = [await asyncio.wait_for(anext(updates), 10) for _ in range(2)]
    assert heard == [("m1", told), ("m2", "")]


async def test_a_batch_of_saves_locks_its_channels_and_tells_of_its_saves_in_a_statement_each(
    store: Store,
) -> None:
    """Each channel's lock and each message's notice were statements of their own in a batch's
    pipeline (7,122 locks and 3,200 notices in the 3000-job burst)."""
    if not isinstance(store, PostgresStore):
        pytest.skip("SQLite takes no locks and sends no notices")
    trips = counted(store).trips
    await asyncio.gather(
        *(
            store.playground.save_playground_message(message(f"m{n}", f"c{n % 3}"), [], keep=10)
            for n in range(9)
        )
    )
    kinds = [
        [sql.split("(")[0] for sql, _ in trip.statements if "pg_" in sql.split("(")[0]]
        for trip in trips
    ]
    assert all(k.count("SELECT pg_advisory_xact_lock") <= 1 for k in kinds), kinds
    assert all(k.count("SELECT pg_notify") <= 1 for k in kinds), kinds
    assert len(trips) < 9, "saves asked together"


async def test_a_batch_of_saves_is_sent_in_a_few_round_trips_whatever_its_size(
    store: Store,
) -> None:
    """Results edited in a burst are saved together; each save and the command it answers were
    two round trips of their own within the batch's transaction (the playground's part of a
    result was the burst's slowest step), now the batch's statements go together."""
    commands = [message(f"c{n}", pending=True) for n in range(12)]
    for command in commands:
        await store.playground.save_playground_message(command, [], keep=100)
    trips = counted(store).trips
    answers = [
        PlaygroundMessage(f"a{n}", "general", False, ("k",), {"id": f"a{n}"}, answers=f"c{n}")
        for n in range(12)
    ]
    await asyncio.gather(
        *(store.playground.save_playground_message(a, [image("k")], keep=100) for a in answers)
    )
    assert len(trips) <= 2
    assert sum(trip.sends for trip in trips) <= 2 * len(trips)
    messages, images = await store.playground.load_playground(keep=100)
    assert not any(m.pending for m in messages)
    assert [i.key for i in images] == ["k"]


async def test_a_trim_of_messages_that_showed_no_image_sweeps_nothing(store: Store) -> None:
    """Every save that trimmed a channel swept the images, reading every message's: 15 % of
    PostgreSQL's statement time in the 3000-job burst, whose trims took commands and progress
    messages, which show none. Only the images a trimmed or saved message showed are looked
    for now."""
    await store.playground.save_playground_message(message("r", keys=("k",)), [image("k")], keep=3)
    trips = counted(store).trips
    for n in range(5):
        await store.playground.save_playground_message(message(f"m{n}"), [], keep=3)
    statements = [sql for trip in trips for sql, _ in trip.statements]
    assert sum(sql.startswith("DELETE FROM playground_messages") for sql in statements) == 5
    assert [sql for sql in statements if "playground_images" in sql] == [
        SQL_SWEEP_UNSHOWN.format(
            "?", store.db.dialect.json_contains("image_keys", "playground_images.key")
        )
    ], "one sweep: when r (showing k) left"
    assert await store.playground.playground_image("k") is None


async def test_the_images_a_save_stops_showing_go_unless_another_message_shows_them(
    store: Store,
) -> None:
    save = store.playground.save_playground_message
    await save(message("a", keys=("k1", "k2")), [image("k1"), image("k2")], keep=10)
    await save(message("b", keys=("k2",)), [image("k2")], keep=10)
    await save(message("a", keys=("k3",)), [image("k3")], keep=10)
    assert await store.playground.playground_image("k1") is None
    assert await store.playground.playground_image("k2") is not None, "b shows it"
    await asyncio.gather(
        save(message("b", keys=("k4",)), [image("k4")], keep=10),
        save(message("b"), [], keep=10),
    )
    for gone in ("k2", "k4"):
        assert await store.playground.playground_image(gone) is None, gone
    assert await store.playground.playground_image("k3") is not None


@pytest.mark.parametrize("asked", ["sweep", "images only a user shows"])
async def test_the_images_are_matched_with_one_read_of_the_messages_whatever_their_number(
    store: Store, asked: str
) -> None:
    """/forget-me finds the images only a user's messages show, then sweeps the images no
    message shows any more. As ``key NOT IN (the messages' keys)`` PostgreSQL searched those
    keys once per image when they are too many to hash (a small ``work_mem`` stands for a large
    playground here)."""
    if not isinstance(store, PostgresStore):
        pytest.skip("SQLite plans these its own way")
    shown = 100
    for n in range(shown):
        await store.playground.save_playground_message(
            message(f"m{n}", f"c{n % 4}", keys=(f"k{n}",)), [image(f"k{n}")], keep=1000
        )
    in_use = store.db.dialect.json_elements("playground_messages", "image_keys")
    statements = {
        "sweep": (SQL_SWEEP_IMAGES.format(in_use), ()),
        "images only a user shows": (
            SQL_IMAGES_ONLY_OF.format(
                shown=in_use, reply_to=store.db.dialect.json_text("body", "reply_to")
            ),
            ("c1", text_inside("nobody")) * 4,
        ),
    }
    sql, values = statements[asked]

    async def explain(tx: Session) -> Any:
        await tx.execute("SET LOCAL work_mem = '64kB'")
        found = await tx.fetch_one("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, values)
        assert found is not None
        return found["QUERY PLAN"][0]["Plan"]

    def visits(node: Any) -> int:
        here = int(node["Actual Rows"]) * int(node["Actual Loops"])
        return here + sum(visits(child) for child in node.get("Plans", ()))

    rows_visited = visits(await store.db.transaction(explain))
    assert rows_visited <= 10 * shown, f"{rows_visited} rows visited for {shown} images"


async def notifications_until_marked(
    listener: psycopg.AsyncConnection[Any], store: PostgresStore
) -> list[str]:
    """The payloads ``listener`` (listening on the playground's channel) heard from ``store``'s
    process, up to a mark sent after them (bounded: 10 s)."""
    origin = store.playground.owner.process_id
    await store.db.execute("SELECT pg_notify(?, ?)", (playground_queries.CHANNEL, "mark"))
    heard: list[str] = []
    async with asyncio.timeout(10):
        async for notification in listener.notifies():
            if notification.payload == "mark":
                return heard
            if notification.payload.startswith(f"{origin} "):
                heard.append(notification.payload)
    raise AssertionError("the listener stopped")


async def told_to_another_process(
    url: str, clock: ManualClock, saves: list[PlaygroundMessage]
) -> tuple[int, list[str], list[tuple[str, str] | None]]:
    """Save ``saves`` together in one process: its transactions, the notifications a listener
    heard from it, and what another process's :meth:`playground_updates` yielded of them."""
    async with (
        await PostgresStore.open(url, clock=clock) as store,
        await PostgresStore.open(url, clock=clock) as other_store,
        await psycopg.AsyncConnection.connect(url, autocommit=True) as listener,
    ):
        await listener.execute(f"LISTEN {playground_queries.CHANNEL}")
        updates = aiter(other_store.playground.playground_updates())
        assert await anext(updates) is None
        trips = counted(store).trips
        await asyncio.gather(
            *(store.playground.save_playground_message(m, [], keep=100) for m in saves)
        )
        transactions = len(trips)
        payloads = await notifications_until_marked(listener, store)
        heard = [await asyncio.wait_for(anext(updates), 10) for _ in saves]
        return transactions, payloads, heard


async def test_a_batch_of_saves_is_told_in_one_notification_in_its_order(
    postgres: PostgresCluster, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every process received one notification per message saved (three processes' notice
    readers spent 0.25–0.35 s of CPU a bench phase, against 0.03–0.05 s alone); a batch's saves
    now come in one, and are heard one by one, in their order."""
    monkeypatch.setattr(playground_queries, "GATHER", LONG_GATHER)
    saves = [replace(message(f"m{n}", f"c{n % 3}"), notice=f'{{"c":"c{n % 3}"}}') for n in range(8)]
    transactions, payloads, heard = await told_to_another_process(
        postgres.create_schema(), clock, saves
    )
    assert transactions == 1, "one batch"
    assert len(payloads) == 1
    assert heard == [(m.id, m.notice) for m in saves]


async def test_a_batch_too_long_for_one_notification_is_told_in_a_few(
    postgres: PostgresCluster, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(playground_queries, "GATHER", LONG_GATHER)
    told = '{"c":"general","v":"' + "x" * 900 + '"}'
    saves = [replace(message(f"m{n}"), notice=told) for n in range(30)]
    transactions, payloads, heard = await told_to_another_process(
        postgres.create_schema(), clock, saves
    )
    assert transactions == 1, "one batch"
    assert [p.count("\n") + 1 for p in payloads] == [7, 7, 7, 7, 2], "7 saves of 926 bytes fit"
    assert all(len(p.encode()) <= playground_queries.PAYLOAD_MOST_BYTES for p in payloads)
    assert heard == [(m.id, told) for m in saves]


async def test_the_notices_of_either_format_are_read_and_this_processs_own_skipped(
    postgres: PostgresCluster, clock: ManualClock
) -> None:
    """A payload of one save is the format of processes of the previous version (a rolling
    restart); this process's own payloads are dropped whatever they hold."""
    async with await PostgresStore.open(postgres.create_schema(), clock=clock) as store:
        own = store.playground.owner.process_id
        updates = aiter(store.playground.playground_updates())
        assert await anext(updates) is None
        for payload in (
            'earlier-1 m1 {"c":"lab"}',
            f'{own} m2 {{"c":"lab"}}\nm3 {{"c":"lab"}}',
            "earlier-1 m4 ",
            f'{own} m5 {{"c":"lab"}}',
            'later-1 m6 {"c":"lab","n":1}\nm7 \nm8 {"c":"dm"}',
            f"{own} ",
            'later-1 m9 {"c":"lab"}',
            "later-1 last ",
        ):
            await store.db.execute("SELECT pg_notify(?, ?)", (playground_queries.CHANNEL, payload))
        heard = []
        async with asyncio.timeout(10):
            while (update := await anext(updates)) != ("last", ""):
                heard.append(update)
        assert heard == [
            ("m1", '{"c":"lab"}'),
            ("m4", ""),
            ("m6", '{"c":"lab","n":1}'),
            ("m7", ""),
            ("m8", '{"c":"dm"}'),
            ("m9", '{"c":"lab"}'),
        ]


def test_a_batch_is_packed_in_its_order_each_save_once_and_one_line_each() -> None:
    saves = [("m1", '{"c":"a"}'), ("m2", "two\nlines"), ("m1", '{"c":"a"}'), ("m3", "")]
    assert playground_queries.packed("p", saves) == ['p m1 {"c":"a"}\nm2 \nm3 ']
    assert playground_queries.packed("p", [("m1", "x")]) == ["p m1 x"], "the earlier format"
    long = "y" * playground_queries.PAYLOAD_MOST_BYTES
    assert playground_queries.packed("p", [("m1", "x"), ("m2", long), ("m3", "z")]) == [
        "p m1 x",
        f"p m2 {long}",
        "p m3 z",
    ], "a save too long to pack goes alone, as before"


def test_a_payload_holds_up_to_its_most_bytes_counted_in_utf_8() -> None:
    most, origin = playground_queries.PAYLOAD_MOST_BYTES, "höst-1-abc"
    first = "ü" * 1000
    room = most - len(f"{origin} m1 {first}\nm2 ".encode())
    exact = [("m1", first), ("m2", "ü" * (room // 2) + "x" * (room % 2))]
    payloads = playground_queries.packed(origin, exact)
    assert [len(p.encode()) for p in payloads] == [most], "exactly the most bytes: one payload"
    over = [("m1", first), ("m2", "ü" * (room // 2) + "x" * (room % 2 + 1))]
    payloads = playground_queries.packed(origin, over)
    assert len(payloads) == 2, "one byte more: two"
    assert all(p.startswith(f"{origin} ") and len(p.encode()) <= most for p in payloads)


def test_a_save_whose_id_no_payload_can_carry_is_not_told() -> None:
    """A process would read other ids of it (a space ends an id, a line break a save)."""
    saves = [("m1", "a"), ("b\nc", ""), ("d e", "f"), ("m2", "g")]
    assert playground_queries.packed("p", saves) == ["p m1 a\nm2 g"]
    assert playground_queries.packed("p", [("d e", "f")]) == []


def made(
    message_id: str,
    channel: str,
    created: float,
    *,
    keys: tuple[str, ...] = (),
    pending: bool = False,
    reply_to: str | None = None,
    author: str = "web-someone",
) -> PlaygroundMessage:
    """A message as the playground saves it: made at ``created``, by ``author``."""
    body = {"id": message_id, "created": created, "reply_to": reply_to, "author": {"id": author}}
    return PlaygroundMessage(message_id, channel, pending, keys, body)


async def test_the_channels_left_quiet_go_with_their_images_but_dms_spared_and_pending_stay(
    store: Store,
) -> None:
    save = store.playground.save_playground_message
    await save(made("q1", "quiet", 100.0, keys=("kq",)), [image("kq")], keep=10)
    await save(made("q2", "quiet", 200.0), [], keep=10)
    await save(made("s1", "shared", 100.0, keys=("ks",)), [image("ks")], keep=10)
    await save(made("b1", "busy", 100.0), [], keep=10)
    await save(made("b2", "busy", 900.0, keys=("ks",)), [], keep=10)
    await save(made("d1", "dm-ann", 100.0), [], keep=10)
    await save(made("g1", "general", 100.0), [], keep=10)
    await save(made("w1", "waiting", 100.0, pending=True), [], keep=10)
    await save(made("u1", "dm_x", 100.0), [], keep=10)

    expire = store.playground.expire_playground_channels
    gone = await expire(500.0, dm_prefix="dm_", spared=["general"])

    assert gone == ["dm-ann", "quiet", "shared"], "dm_ is the prefix: dm-ann is a channel"
    messages, images = await store.playground.load_playground(keep=10)
    assert sorted(m.id for m in messages) == ["b1", "b2", "g1", "u1", "w1"]
    assert [i.key for i in images] == ["ks"], "b2 still shows it"
    assert await store.playground.playground_image("kq") is None
    assert await expire(500.0, dm_prefix="dm_", spared=["general"]) == []


async def test_a_load_reads_every_shared_channel_and_only_the_dms_saved_in_last(
    store: Store,
) -> None:
    save = store.playground.save_playground_message
    for message_id, channel in (
        ("a1", "dm-a"), ("b1", "dm-b"), ("x1", "lab"), ("c1", "dm-c"), ("a2", "dm-a"),
        ("y1", "dm_y"),
    ):  # fmt: skip
        await save(made(message_id, channel, 1.0), [], keep=10)

    messages, _ = await store.playground.load_playground(keep=10, dm_prefix="dm-", most_dms=2)

    assert [m.id for m in messages] == ["a1", "x1", "c1", "a2", "y1"], "dm-b is the quietest"
    everything, _ = await store.playground.load_playground(keep=10)
    assert len(everything) == 6


async def test_genbots_answers_to_a_users_messages_are_about_them(store: Store) -> None:
    save = store.playground.save_playground_message
    user = "web-ann00000000000000000000"
    await save(made("m1", "spam", 1.0, author=user), [], keep=10)
    await save(
        made("a1", "spam", 2.0, keys=("ka",), reply_to="m1", author="genbot"),
        [image("ka")],
        keep=10,
    )
    await save(made("o1", "spam", 3.0), [], keep=10)
    await save(made("a2", "spam", 4.0, reply_to="o1", author="genbot"), [], keep=10)

    about = await store.playground.about_user(user, "dm-ann")

    assert sorted(about[0]) == ["a1", "m1"] and about[1] == ["ka"]
    assert await store.playground.forget_user(user, "dm-ann") == about
    messages, _ = await store.playground.load_playground(keep=10)
    assert [m.id for m in messages] == ["o1", "a2"]


async def test_an_image_another_users_message_shows_too_is_not_counted_as_the_users(
    store: Store,
) -> None:
    save = store.playground.save_playground_message
    user = "web-ann00000000000000000000"
    await save(made("m1", "lab", 1.0, keys=("shared", "mine"), author=user), [], keep=10)
    await save(made("o1", "lab", 2.0, keys=("shared",)), [image("shared")], keep=10)
    await save(made("m2", "lab", 3.0, keys=("mine",), author=user), [image("mine")], keep=10)

    about = await store.playground.about_user(user, "dm-ann")

    assert sorted(about[0]) == ["m1", "m2"]
    assert about[1] == ["mine"], "o1 (no reply_to) shows 'shared' too"
    assert await store.playground.forget_user(user, "dm-ann") == about
    assert await store.playground.playground_image("shared") is not None


async def test_a_forget_tells_the_other_processes_with_its_deletion(
    store: Store, other_store: Store
) -> None:
    """Told in the deleting transaction, in the order of the saves around it, whether or not
    the history held anything of the user (another process may hold more of them)."""
    user = "web-ann00000000000000000000"
    updates = aiter(other_store.playground.playground_updates())
    assert await anext(updates) is None
    await store.playground.save_playground_message(made("m1", "lab", 1.0, author=user), [], keep=10)

    forgot = await store.playground.forget_user(user, "dm-ann", notice='{"k":"forgotten"}')
    await store.playground.forget_user("web-bob", "dm-bob", notice='{"k":"forgotten"}')
    await store.playground.save_playground_message(message("m2"), [], keep=10)

    assert forgot == (["m1"], [])
    if not isinstance(store, PostgresStore):
        return
    heard = [await asyncio.wait_for(anext(updates), 10) for _ in range(4)]
    assert heard == [
        ("m1", ""),
        (user, '{"k":"forgotten"}'),
        ("web-bob", '{"k":"forgotten"}'),
        ("m2", ""),
    ]


async def test_a_forget_is_marked_for_an_hour_for_the_processes_that_miss_its_notice(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    """Where processes share the database, a forget is marked under a name derived from the
    user's id (never the id) for as long as the playground holds a file, so a process whose
    feed was down finds whom it forgot and when; a later forget of them moves the time. With
    one process (SQLite) nobody misses a notice, and nothing is marked."""
    ann, bob = "web-ann00000000000000000000", "web-bob00000000000000000000"
    await store.playground.forget_user(ann, "dm-ann")
    if not store.db.dialect.shared:
        assert await other_store.playground.forgotten_among([ann]) == {}
        assert await store.db.fetch_all("SELECT name FROM playground_meta") == []
        return
    forgot_at = clock()
    found = await other_store.playground.forgotten_among([ann, bob])
    assert found == {ann: pytest.approx(forgot_at, abs=0.001)}
    names = [
        str(row["name"]) for row in await store.db.fetch_all("SELECT name FROM playground_meta")
    ]
    assert len(names) == 1 and ann not in names[0] and ann.removeprefix("web-") not in names[0]

    clock.advance(600)
    await store.playground.forget_user(ann, "dm-ann")
    assert await other_store.playground.forgotten_among([ann]) == {
        ann: pytest.approx(forgot_at + 600, abs=0.001)
    }
    clock.advance(3601)
    assert await other_store.playground.forgotten_among([ann]) == {}
    await store.playground.forget_user(bob, "dm-bob")
    rows = await store.db.fetch_all("SELECT name FROM playground_meta")
    assert len(rows) == 1
