"""Fixtures: a fresh fake Discord per test, a recording core, and the real adapter on top."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.adapters.discord.harness import Harness, RecordingCore
from tests.fakes.discord import FakeDiscord


@pytest.fixture
async def fake(request: pytest.FixtureRequest) -> AsyncIterator[FakeDiscord]:
    """Options via indirect parametrization: ``parametrize("fake", [{...}], indirect=True)``."""
    async with FakeDiscord(**getattr(request, "param", {})) as server:
        yield server


@pytest.fixture
def core() -> RecordingCore:
    return RecordingCore()


@pytest.fixture
async def harness(fake: FakeDiscord) -> AsyncIterator[Harness]:
    errors: list[tuple[str, BaseException]] = []
    harness = Harness(fake, errors)
    yield harness
    await harness.stop_all()
    assert not errors, f"errors while handling Discord traffic: {errors}"
    late = [i for i in fake.interactions.values() if i.late_callbacks]
    assert not late, "interactions answered after Discord's deadline"


@pytest.fixture
async def bot(harness: Harness, core: RecordingCore) -> Harness:
    """The adapter started with default settings (commands synced to the fake's guild)."""
    await harness.start(core)
    return harness
