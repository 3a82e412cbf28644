"""SQLite-only tests get a :class:`SqliteStore` (with its worker-thread escape hatch)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage import SqliteStore
from tests.storage.conftest import ManualClock


@pytest.fixture
async def store(db_path: Path, clock: ManualClock) -> AsyncIterator[SqliteStore]:
    opened = await SqliteStore.open(db_path, clock=clock)
    try:
        yield opened
    finally:
        await opened.close()
