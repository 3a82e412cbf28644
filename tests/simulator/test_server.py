"""The server as a whole: stats, the request log, determinism under a seed, and `genbot sim`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.simulator.conftest import FREE_KEY, KEY, Api, running

ROOT = Path(__file__).resolve().parents[2]


async def test_stats_count_requests_creations_accounts_and_tasks(api: Api) -> None:
    grid = await api.imagine("a fox --fast")
    await api.create("upscale", {"origin_task_id": grid, "index": "1"})
    await api.post("/diff/txt2img", {"prompt": "a fox"})
    await api.post("/gen/v2/imagine", {"prompt": "a fox"}, key="bad")
    async with api.session.get("/_sim/stats") as response:
        stats = await response.json()
    assert stats["requests"] == {
        "/gen/v2/imagine": 2,
        "/gen/v2/fetch": 1,
        "/gen/v2/upscale": 1,
        "/diff/txt2img": 1,
    }
    assert stats["creations"] == {"imagine": 1, "upscale": 1, "diff_txt2img": 1}
    assert stats["accounts"][KEY] == {"plan": "developer", "balance": 9988, "frozen": 2,
                                      "charged": 10}  # fmt: skip
    assert stats["accounts"][FREE_KEY]["plan"] == "free"
    assert stats["tasks"] == {"finished": 1, "pending": 1}
    assert stats["diffusion_jobs"] == 1 and stats["faults"] == {}
    assert stats["webhooks"] == {"attempts": 0, "delivered": 0}
    assert stats["now"] == 1_700_100_000.0


async def test_request_log_keeps_bodies_and_statuses_but_no_keys(api: Api) -> None:
    await api.post("/gen/v2/imagine", {"prompt": "a fox"})
    await api.post("/gen/v2/imagine", raw="{broken")
    await api.post("/gen/v2/imagine", {"prompt": "a fox"}, key="wrong")
    entries = api.sim.state.requests
    assert [(e.method, e.path, e.status) for e in entries] == [
        ("POST", "/gen/v2/imagine", 200)
    ] * 2 + [("POST", "/gen/v2/imagine", 401)]
    assert entries[0].body == {"prompt": "a fox"} and entries[1].body == "{broken"
    assert entries[0].at == 1_700_000_000.0
    assert KEY not in repr(entries)


def _normalized(value: Any, base_url: str) -> str:
    return json.dumps(value, sort_keys=True).replace(base_url, "BASE")


async def _scripted_run(seed: int) -> tuple[list[str], list[bytes]]:
    async with running(seed=seed) as api:
        texts: list[str] = []
        grid = await api.imagine("a lighthouse --turbo")
        upscale = await api.upscale(grid, "2")
        describe = await api.finished("describe", {"image_url": "https://img.example/a.png"})
        for task_id in (grid, upscale, describe):
            texts.append(_normalized(await api.fetch(task_id), api.sim.base_url))
        _, answer = await api.post("/gen/v2/multi_fetch", {"task_ids": [grid, upscale]})
        texts.append(_normalized(answer, api.sim.base_url))
        _, diffusion = await api.post("/diff/txt2img", {"prompt": "a fox"})
        texts.append(_normalized(diffusion, api.sim.base_url))
        pictures = [
            (await api.download((await api.fetch(task_id))["task_result"]["image_url"]))[1]
            for task_id in (grid, upscale)
        ]
        pictures.append((await api.download(diffusion["output"][0]))[1])
        return texts, pictures


async def test_same_seed_same_records_and_image_bytes() -> None:
    first = await _scripted_run(seed=42)
    second = await _scripted_run(seed=42)
    other = await _scripted_run(seed=43)
    assert first == second
    assert first[0] != other[0] and first[1][0] != other[1][0]


async def test_same_seed_same_faults() -> None:
    kinds = []
    for _ in range(2):
        async with running(fault_rate=0.5, seed=9, slow_seconds=0.0) as api:
            for n in range(20):
                with contextlib.suppress(aiohttp.ClientConnectionError):
                    await api.post("/gen/v2/imagine", {"prompt": f"fox {n}"})
            kinds.append([(e.fault, e.fault_phase) for e in api.sim.state.requests])
    assert kinds[0] == kinds[1]
    assert {kind for kind, _ in kinds[0]} == {None, "error_500", "reset", "slow"}


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
async def test_genbot_sim_prints_its_address_serves_and_stops_cleanly(
    stop_signal: signal.Signals,
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "genbot", "sim", "--port", "0", "--api-key", "demo-key",
        "--time-scale", "0", cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    try:
        async with asyncio.timeout(20):
            first = (await process.stdout.readline()).decode()
            pattern = r"genbot simulator listening on (http://127\.0\.0\.1:\d+) \(api key: (.*)\)\n"
            match = re.fullmatch(pattern, first)
            assert match and match.group(2) == "demo-key", first
            base_url = match.group(1)
            walkthrough = b""
            while b"_sim/stats" not in walkthrough:
                walkthrough += await process.stdout.readline()
            text = walkthrough.decode()
            for fragment in ("/gen/v2/imagine", "/gen/v2/fetch", "/v1/chat/completions",
                             "/diff/txt2img", "X-API-KEY: demo-key", base_url):  # fmt: skip
                assert fragment in text
            async with aiohttp.ClientSession(base_url) as session:
                reply = await session.post(
                    "/gen/v2/imagine", json={"prompt": "a fox"}, headers={"X-API-KEY": "demo-key"}
                )
                task_id = (await reply.json())["task_id"]
                reply = await session.post("/gen/v2/fetch", json={"task_id": task_id})
                assert (await reply.json())["status"] == "finished"
            process.send_signal(stop_signal)
            rest, errors = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0
    assert b"Traceback" not in errors and b"Traceback" not in rest
    assert b"genbot simulator stopped" in rest
