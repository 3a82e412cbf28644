"""The one migration history, on both backends: an empty database gets every version once (also
when processes start together), old rows are carried into new columns, and a database newer
than the code is refused."""

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
