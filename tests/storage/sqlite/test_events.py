"""SQLite's event dedupe deletes expired entries now and then."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlite_utils import Database

import storage.sqlite.events
from storage import SqliteStore
from tests.storage.conftest import ManualClock


async def test_expired_events_are_pruned_every_few_calls(
    db_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage.sqlite.events, "PRUNE_EVERY", 3)
    async with await SqliteStore.open(db_path, clock=clock) as store:
        assert await store.remember_event("slack", "old")
        clock.advance(store.event_retention + 1)
        assert await store.remember_event("slack", "a")
        assert await store.remember_event("slack", "b")

        def remembered(db: Database) -> list[str]:
            return [row[0] for row in db.execute("SELECT event_id FROM processed_events")]

        assert sorted(await store.run_in_worker(remembered)) == ["a", "b"]
