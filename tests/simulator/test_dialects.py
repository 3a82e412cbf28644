"""``--dialect spec``: a provider that knows only what the API documentation states."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import aiohttp
import pytest

from simulator.state import Dialect
from tests.simulator.conftest import running
from tests.simulator.test_chat_support import FREE_KEY, chat_simulator, post_chat, request
from tests.simulator.test_webhooks import receiver

ROOT = Path(__file__).resolve().parents[2]
CHAT = "/v1/chat/completions"
DOCUMENTED_GRID_ACTIONS = {
    "reroll",
    *(f"upscale{i}" for i in range(1, 5)),
    *(f"variation{i}" for i in range(1, 5)),
}


async def test_only_first_grids_carry_actions_and_exactly_the_documented_ones() -> None:
    async with running(dialect="spec") as api:
        grid = await api.imagine("a fox --v 6")
        upscale = await api.upscale(grid)
        variation = await api.finished("variation", {"origin_task_id": grid, "index": "2"})
        second = await api.finished("upscale", {"origin_task_id": upscale, "index": "subtle"})

        assert set((await api.fetch(grid))["task_result"]["actions"]) == DOCUMENTED_GRID_ACTIONS
        for derivative in (upscale, variation, second):
            assert (await api.fetch(derivative))["task_result"]["actions"] == []


async def test_the_default_dialect_offers_follow_ups_on_derivatives() -> None:
    async with running() as api:
        grid = await api.imagine("a fox --v 6")
        upscale = await api.upscale(grid)
        assert "outpaint_2" in (await api.fetch(upscale))["task_result"]["actions"]


async def test_chat_rpm_answers_429_with_retry_after_until_the_minute_passes() -> None:
    async with chat_simulator(chat_rpm=2, time_scale=1.0) as sim:
        first = await post_chat(sim, request("hi"))
        second = await post_chat(sim, request("hi"))
        sim.advance(20)
        limited = await post_chat(sim, request("hi"))
        assert (first.status, second.status, limited.status) == (200, 200, 429)
        assert limited.headers["Retry-After"] == "40"
        assert limited.body["error"]["code"] == "rate_limit_exceeded"
        sim.advance(40)
        assert (await post_chat(sim, request("hi"))).status == 200


@pytest.mark.parametrize(("dialect", "status"), [("default", 403), ("spec", 401)])
async def test_the_plan_refusal_status_depends_on_the_dialect(
    dialect: Dialect, status: int
) -> None:
    async with chat_simulator(dialect=dialect) as sim:
        reply = await post_chat(sim, request("hi", model="llm-4"), key=FREE_KEY)
        assert reply.status == status
        assert "Developer plan" in reply.body["error"]["message"]


async def test_spec_webhook_bodies_carry_only_the_task_id_and_status() -> None:
    async with receiver() as hook, running(time_scale=0.01, dialect="spec") as api:
        task_id = await api.create(
            "imagine", {"prompt": "a fox", "webhook_endpoint": hook.url, "webhook_secret": "s"}
        )
        api.sim.advance(100_000)
        async with asyncio.timeout(10):
            await api.sim.webhooks_idle()
        [(headers, body)] = hook.calls
        assert body == {"task_id": task_id, "status": "finished"}
        assert headers["x-webhook-secret"] == "s"


async def test_genbot_sim_takes_the_dialect_and_chat_rpm_options() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "genbot", "sim", "--port", "0", "--time-scale", "0",
        "--dialect", "spec", "--chat-rpm", "1", "--free-api-key", "free-key",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        async with asyncio.timeout(20):
            first = (await process.stdout.readline()).decode()
            match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", first)
            assert match, first
            async with aiohttp.ClientSession(match.group(1)) as session:
                chat = {"model": "llm-4", "messages": [{"role": "user", "content": "hi"}]}
                free = {"Authorization": "Bearer free-key"}
                developer = {"Authorization": "Bearer sim-key"}
                statuses = []
                for headers in (free, developer, developer):
                    async with session.post(CHAT, json=chat, headers=headers) as reply:
                        statuses.append(reply.status)
                assert statuses == [401, 200, 429]
    finally:
        process.terminate()
        await process.wait()
