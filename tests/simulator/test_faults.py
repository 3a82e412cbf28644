"""Fault injection: every kind happens, creation faults strike before or after creating, and the
control plane and image downloads are never faulted; a held path answers once released."""

from __future__ import annotations

import asyncio
from collections import Counter

import aiohttp

from tests.adapters.web.fakes import eventually
from tests.simulator.conftest import KEY, Api, running

FAULTY = {"fault_rate": 1.0, "seed": 5, "slow_seconds": 0.01}


async def _outcome(api: Api, path: str, body: object, key: str | None = KEY) -> str:
    """What the client saw: ``reset``, ``500`` or ``ok``."""
    try:
        status, answer = await api.post(path, body, key=key)
    except aiohttp.ClientConnectionError:
        return "reset"
    if status == 500:
        assert answer == {"error": {"message": "simulated internal server error; please retry"}}
        return "500"
    return "ok"


async def test_each_fault_kind_happens_and_matches_the_log() -> None:
    async with running(**FAULTY) as api:
        seen = [await _outcome(api, "/gen/v2/fetch", {"task_id": "x"}) for _ in range(24)]
        entries = api.sim.state.requests_to("/gen/v2/fetch")
        assert len(entries) == 24
        expected = {"error_500": "500", "reset": "reset", "slow": "ok"}
        assert seen == [expected[str(entry.fault)] for entry in entries]
        assert set(Counter(entry.fault for entry in entries)) == {"error_500", "reset", "slow"}
        assert all(e.fault_phase is None for e in entries)
        assert {e.status for e in entries if e.fault == "slow"} == {400}
        assert {e.status for e in entries if e.fault == "reset"} == {None}


async def test_creation_faults_strike_before_or_after_creating_and_say_which() -> None:
    async with running(**FAULTY) as api:
        seen = [await _outcome(api, "/gen/v2/imagine", {"prompt": f"fox {n}"}) for n in range(30)]
        entries = api.sim.state.requests_to("/gen/v2/imagine")
        lost = [e for e in entries if e.fault in ("error_500", "reset")]
        phases = Counter(e.fault_phase for e in lost)
        assert phases["before_create"] > 0 and phases["after_create"] > 0
        for entry, outcome in zip(entries, seen, strict=True):
            if entry.fault_phase == "before_create":
                assert entry.created_id is None
            else:
                assert entry.created_id in api.sim.state.tasks
            if entry.fault == "slow":
                assert outcome == "ok"
        created = {e.created_id for e in entries if e.created_id}
        assert created == set(api.sim.state.tasks)
        assert api.sim.state.accounts[KEY].frozen == 4 * len(created)


async def test_diffusion_creations_are_faulted_too() -> None:
    async with running(**FAULTY) as api:
        for _ in range(12):
            await _outcome(api, "/diff/txt2img", {"prompt": "a fox"})
        entries = api.sim.state.requests_to("/diff/txt2img")
        assert {e.fault_phase for e in entries if e.fault != "slow"} >= {
            "before_create",
            "after_create",
        }
        created = {e.created_id for e in entries if e.created_id}
        assert {str(job) for job in api.sim.state.diffusion_jobs} == created


async def test_control_plane_and_image_downloads_are_never_faulted() -> None:
    async with running(**FAULTY) as api:
        while not api.sim.state.tasks:
            await _outcome(api, "/gen/v2/imagine", {"prompt": "a fox"})
        api.sim.advance(100_000)
        task = next(iter(api.sim.state.tasks.values()))
        for _ in range(5):
            assert (await api.download(task.image_url("images")))[0] == 200
            async with api.session.get("/_sim/stats") as response:
                assert response.status == 200
        downloads = api.sim.state.requests_to("/images/")
        assert len(downloads) == 5 and {d.fault for d in downloads} == {None}
        assert api.sim.state.requests_to("/_sim/") == []


async def test_reads_can_be_spared_without_moving_the_creations_faults() -> None:
    # fault_reads off: fetch and multi_fetch never fail nor draw the dice, so the creations
    # get the faults they get with no reads in between.
    async with running(**FAULTY) as alone:
        for n in range(8):
            await _outcome(alone, "/gen/v2/imagine", {"prompt": f"fox {n}"})
        expected = [e.fault for e in alone.sim.state.requests_to("/gen/v2/imagine")]
    async with running(**FAULTY, fault_reads=False) as api:
        for n in range(8):
            await _outcome(api, "/gen/v2/imagine", {"prompt": f"fox {n}"})
            assert await _outcome(api, "/gen/v2/fetch", {"task_id": "x"}) == "ok"
            assert await _outcome(api, "/gen/v2/multi_fetch", {"task_ids": ["x"]}) == "ok"
        reads = [
            *api.sim.state.requests_to("/gen/v2/fetch"),
            *api.sim.state.requests_to("/gen/v2/multi_fetch"),
        ]
        assert {e.fault for e in reads} == {None}
        assert [e.fault for e in api.sim.state.requests_to("/gen/v2/imagine")] == expected


async def _read_stream(api: Api, body: object, headers: dict[str, str]) -> str | None:
    """The SSE text received before the stream ended or broke (None on a reset or 500)."""
    received = bytearray()
    try:
        async with api.session.post("/v1/chat/completions", json=body, headers=headers) as reply:
            if reply.status != 200:
                return None
            try:
                async for chunk in reply.content.iter_any():
                    received += chunk
            except aiohttp.ClientPayloadError:
                pass
    except aiohttp.ClientConnectionError:
        return None
    return received.decode()


async def test_streamed_chat_can_be_cut_but_plain_chat_cannot() -> None:
    async with running(**FAULTY, time_scale=0.001) as api:
        headers = {"Authorization": f"Bearer {KEY}"}
        body = {"model": "llm-3.5-turbo", "messages": [{"role": "user", "content": "words: 40"}]}
        cut_texts = []
        for _ in range(16):
            text = await _read_stream(api, {**body, "stream": True}, headers)
            if api.sim.state.requests[-1].fault == "cut_stream":
                cut_texts.append(text)
        assert cut_texts
        assert all(text and "data: [DONE]" not in text for text in cut_texts)
        for _ in range(8):
            try:
                async with api.session.post(
                    "/v1/chat/completions", json=body, headers=headers
                ) as reply:
                    await reply.read()
            except aiohttp.ClientConnectionError:
                continue
        plain = [e for e in api.sim.state.requests_to("/v1/chat") if not e.body.get("stream")]
        assert len(plain) == 8 and "cut_stream" not in {e.fault for e in plain}
        streamed = [e for e in api.sim.state.requests_to("/v1/chat") if e.body.get("stream")]
        assert len(streamed) == 16


async def test_no_faults_without_a_fault_rate(api: Api) -> None:
    for _ in range(10):
        assert await _outcome(api, "/gen/v2/imagine", {"prompt": "a fox"}) == "ok"
    assert {e.fault for e in api.sim.state.requests} == {None}


async def test_a_held_path_is_logged_and_answered_only_once_released(api: Api) -> None:
    release = api.sim.state.hold("/gen/v2/imagine")
    held = asyncio.create_task(api.post("/gen/v2/imagine", {"prompt": "a fox"}))
    fetched = await api.post("/gen/v2/fetch", {"task_id": "none"})
    await eventually(lambda: bool(api.sim.state.requests_to("/gen/v2/imagine")))
    assert fetched[0] == 400 and not held.done() and not api.sim.state.tasks
    release.set()
    async with asyncio.timeout(5):
        status, _ = await held
    assert status == 200 and len(api.sim.state.tasks) == 1
