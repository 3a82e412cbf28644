"""Fixtures for the storage tests: real SQLite files in ``tmp_path`` and a settable clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from storage import NewJob, Store

START = datetime(2024, 3, 1, 12, 0, tzinfo=UTC).timestamp()


class ManualClock:
    """A clock the test moves by hand (read on the store's worker thread)."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "genbot.db"


@pytest.fixture
async def store(db_path: Path, clock: ManualClock) -> AsyncIterator[Store]:
    opened = await Store.open(db_path, clock=clock)
    try:
        yield opened
    finally:
        await opened.close()


def new_job(**overrides: object) -> NewJob:
    """An imagine job by user ``u1`` in ``discord``/``c1`` unless overridden."""
    fields: dict[str, object] = {
        "family": "task",
        "type": "imagine",
        "requester_id": "u1",
        "platform": "discord",
        "workspace_id": "g1",
        "channel_id": "c1",
        "prompt": "a fox --v 6",
    }
    fields.update(overrides)
    return NewJob(**fields)  # type: ignore[arg-type]
