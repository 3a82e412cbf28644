"""The one migration history, on both backends: an empty database gets every version once (also
when processes start together), old rows are carried into new columns (user turns' authors
derived where they can be), and a database newer than the code is refused."""

from __future__ import annotations

import asyncio

import pytest

from storage import LATEST_VERSION, StorageError, migrate
from storage.sql.migrations import current_version
from tests.storage.conftest import Database, ManualClock


async def test_an_empty_database_gets_every_version_once_however_many_start_together(
    database: Database, clock: ManualClock
) -> None:
    async with asyncio.timeout(60):
        stores = await asyncio.gather(*(database.open(clock) for _ in range(4)))
    try:
        assert {await store.schema_version() for store in stores} == {LATEST_VERSION}
        rows = await stores[0].db.fetch_all("SELECT version FROM schema_version ORDER BY version")
        assert [row["version"] for row in rows] == list(range(1, LATEST_VERSION + 1))
    finally:
        await asyncio.gather(*(store.close() for store in stores))


async def test_is_dm_moves_from_the_parameters_of_old_jobs_to_its_column(
    database: Database, clock: ManualClock
) -> None:
    db = await database.connect()
    try:
        assert await migrate(db, target=10) == 10
        for job_id, parameters in [
            ("dm", '{"is_dm": true, "aspect_ratio": "1:1"}'),
            ("channel", '{"aspect_ratio": "1:1"}'),
            ("said-no", '{"is_dm": false}'),
        ]:
            await db.execute(
                "INSERT INTO jobs (id, family, type, status, requester_id, platform,"
                " workspace_id, channel_id, parameters, created_at, updated_at)"
                " VALUES (?, 'task', 'imagine', 'posted', 'u1', 'slack', 'T1', 'D1', ?, 1, 1)",
                (job_id, parameters),
            )
    finally:
        await db.close()
    store = await database.open(clock)
    try:
        jobs = [await store.jobs.get_job(job_id) for job_id in ("dm", "channel", "said-no")]
    finally:
        await store.close()
    assert [(job.is_dm, job.parameters) for job in jobs if job is not None] == [
        (True, {"aspect_ratio": "1:1"}),
        (False, {"aspect_ratio": "1:1"}),
        (False, {}),
    ]


async def test_the_authors_of_earlier_user_turns_are_derived_where_known_else_stay_unknown(
    database: Database, clock: ManualClock
) -> None:
    conversations = (  # label, kind, who started it
        (1, "thread", "u1"),  # someone else's turns in it too: the creator tells nothing
        (2, "dm", "u3"),
        (3, "reply_chain", "u1"),
    )
    turns = (  # label, conversation, role, the user an answer was for
        (1, 1, "user", None),
        (2, 1, "assistant", None),  # the model's function call
        (3, 1, "assistant", "u1"),
        (4, 1, "user", None),  # never answered
        (5, 1, "user", None),
        (6, 1, "assistant", "u2"),
        (7, 1, "assistant", "u9"),  # answered again later, by someone else's press
        (8, 2, "user", None),
        (9, 1, "user", None),  # u2 edited turn 5: a branch, never answered
        (10, 3, "user", None),
    )
    made: dict[int, int] = {}
    db = await database.connect()
    try:
        assert await migrate(db, target=27) == 27
        for label, kind, created_by in conversations:
            row = await db.fetch_one(
                "INSERT INTO conversations (platform, workspace_id, channel_id, thread_key,"
                " kind, created_by, created_at, updated_at) VALUES ('slack', 'T1', 'C1', ?, ?,"
                " ?, 1, 1) RETURNING id",
                (str(label), kind, created_by),
            )
            assert row is not None
            made[-label] = int(row["id"])
        for label, conversation, role, asked_by in turns:
            row = await db.fetch_one(
                "INSERT INTO messages (conversation_id, role, content, created_at, asked_by)"
                " VALUES (?, ?, 'hi', 1, ?) RETURNING id",
                (made[-conversation], role, asked_by),
            )
            assert row is not None
            made[label] = int(row["id"])
        for number, first_turn in ((1, 5), (2, 9)):
            await db.execute(
                "INSERT INTO chat_branches (conversation_id, fork_turn, number, first_turn)"
                " VALUES (?, ?, ?, ?)",
                (made[-1], made[5], number, made[first_turn]),
            )
    finally:
        await db.close()
    store = await database.open(clock)
    try:
        rows = await store.db.fetch_all("SELECT id, author FROM messages")
    finally:
        await store.close()
    label_of = {made_id: label for label, made_id in made.items()}
    assert {label_of[row["id"]]: row["author"] for row in rows} == {
        1: "u1", 2: None, 3: None, 4: None, 5: "u2", 6: None, 7: None, 8: "u3", 9: "u2",
        10: None,
    }  # fmt: skip


async def test_a_database_newer_than_the_code_is_refused(
    database: Database, clock: ManualClock
) -> None:
    store = await database.open(clock)
    try:
        await store.db.execute("INSERT INTO schema_version VALUES (99, 'from the future', 0)")
    finally:
        await store.close()
    with pytest.raises(StorageError, match="schema version 99 is newer"):
        await database.open(clock)
    db = await database.connect()
    try:
        assert await current_version(db) == 99
    finally:
        await db.close()
