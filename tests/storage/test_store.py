"""What every store offers about itself: its schema version and a write probe for readiness."""

from __future__ import annotations

from storage import LATEST_VERSION, Store


async def test_the_write_probe_commits_one_row_per_process(
    store: Store, other_store: Store
) -> None:
    await store.probe_write()
    await store.probe_write()
    await other_store.probe_write()

    assert await store.schema_version() == LATEST_VERSION
    probes = await store.db.fetch_one("SELECT count(*) AS n FROM storage_probes")
    assert probes is not None and probes["n"] == 2
