"""A SQLite database has one process: nothing to wake, and it says it is not shared."""

from __future__ import annotations

from storage import SqliteStore
from tests.storage.conftest import new_job
from tests.storage.helpers import create_job


async def test_one_process_has_nothing_to_wake(store: SqliteStore) -> None:
    assert not store.db.dialect.shared
    job = await create_job(store.admission, new_job())
    await store.leasing.wake_owner(job)
    assert [job_id async for job_id in store.leasing.wakeups()] == []
