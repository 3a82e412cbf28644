"""Fixtures for the simulator's image task and diffusion tests: a simulator on a free port with a
manual clock (time moves only when a test advances it) and a small HTTP helper around it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig

CLOCK_START = 1_700_000_000.0
KEY = "sim-key"
FREE_KEY = "free-key"
LONG_ENOUGH = 100_000.0


@dataclass
class Api:
    """Real HTTP calls to one running simulator."""

    session: aiohttp.ClientSession
    sim: RunningSimulator

    async def post(
        self, path: str, body: Any = None, *, key: str | None = KEY, raw: str | None = None
    ) -> tuple[int, Any]:
        headers = {"X-API-KEY": key} if key is not None else {}
        if raw is not None:
            headers["Content-Type"] = "application/json"
            response = await self.session.post(path, data=raw, headers=headers)
        else:
            response = await self.session.post(path, json=body, headers=headers)
        async with response:
            return response.status, await response.json()

    async def create(self, endpoint: str, body: dict[str, Any], *, key: str | None = KEY) -> str:
        """Create a task and return its id (the creation must succeed)."""
        status, answer = await self.post(f"/gen/v2/{endpoint}", body, key=key)
        assert status == 200, answer
        assert answer["status"] == "success" and answer["message"] == "", answer
        return str(answer["task_id"])

    async def refused(self, endpoint: str, body: dict[str, Any], *, key: str | None = KEY) -> str:
        """Post a creation that must be refused with 400; return the error message."""
        status, answer = await self.post(f"/gen/v2/{endpoint}", body, key=key)
        assert status == 400, answer
        return str(answer["error"]["message"])

    async def failed(self, endpoint: str, body: Any, *, key: str | None = KEY) -> str:
        """Post a creation that must fail in the body (2.5); return its message."""
        status, answer = await self.post(f"/gen/v2/{endpoint}", body, key=key)
        assert status == 200, answer
        assert answer == {"task_id": "", "status": "failed", "message": answer["message"]}
        return str(answer["message"])

    async def fetch(self, task_id: str) -> dict[str, Any]:
        status, record = await self.post("/gen/v2/fetch", {"task_id": task_id}, key=None)
        assert status == 200, record
        assert isinstance(record, dict)
        return record

    async def finished(self, endpoint: str, body: dict[str, Any], *, key: str = KEY) -> str:
        """Create a task, let simulated time pass until it ends, and check it finished."""
        task_id = await self.create(endpoint, body, key=key)
        self.sim.advance(LONG_ENOUGH)
        record = await self.fetch(task_id)
        assert record["status"] == "finished", record
        return task_id

    async def imagine(self, prompt: str = "a fox in the snow", **fields: Any) -> str:
        return await self.finished("imagine", {"prompt": prompt, **fields})

    async def upscale(self, origin: str, index: str = "1") -> str:
        return await self.finished("upscale", {"origin_task_id": origin, "index": index})

    async def download(self, url: str) -> tuple[int, bytes]:
        async with self.session.get(url) as response:
            return response.status, await response.read()


@asynccontextmanager
async def running(**overrides: Any) -> AsyncIterator[Api]:
    """A simulator (manual clock, time_scale 1, loopback webhooks allowed) and its helper."""
    settings: dict[str, Any] = {
        "clock_start": CLOCK_START,
        "insecure_webhooks": True,
        "free_api_key": FREE_KEY,
    }
    settings.update(overrides)
    async with (
        serve(SimulatorConfig(**settings)) as sim,
        aiohttp.ClientSession(base_url=sim.base_url) as session,
    ):
        yield Api(session, sim)


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    async with running() as helper:
        yield helper
