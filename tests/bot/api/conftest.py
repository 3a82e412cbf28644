"""Fixtures: a simulator on 127.0.0.1 and a ProviderClient pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.api import ProviderClient
from simulator.server import RunningSimulator, serve
from tests.bot.api.support import FAST_RETRY, settings_for, sim_config


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(sim_config()) as running:
        yield running


@pytest.fixture
async def api(sim: RunningSimulator) -> AsyncIterator[ProviderClient]:
    async with ProviderClient(settings_for(sim.base_url), retry=FAST_RETRY) as client:
        yield client
