"""What every store offers about itself: its schema version and a write probe for readiness."""

from __future__ import annotations

from storage import LATEST_VERSION, Storage
from storage.postgres import PostgresStore
from storage.postgres.schema import LATEST_VERSION as POSTGRES_LATEST


async def test_the_write_probe_commits_one_row_per_process(
    store: Storage, other_store: Storage
) -> None:
    await store.probe_write()
    await store.probe_write()
    await other_store.probe_write()

    latest = POSTGRES_LATEST if isinstance(store, PostgresStore) else LATEST_VERSION
    assert await store.schema_version() == latest
    assert await _probe_rows(store) == 2


async def _probe_rows(store: Storage) -> int:
    if isinstance(store, PostgresStore):
        async with store.connection() as conn:
            cursor = await conn.execute("SELECT count(*) AS n FROM storage_probes")
            row = await cursor.fetchone()
            assert row is not None
            return int(row["n"])
    return int(
        await store.run_in_worker(  # type: ignore[attr-defined]
            lambda db: db.execute("SELECT count(*) FROM storage_probes").fetchone()[0]
        )
    )
