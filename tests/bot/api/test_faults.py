"""Against a simulator with seeded faults: reads recover, creations are never repeated,
cut streams raise StreamInterrupted with the text received so far."""

from __future__ import annotations

import asyncio
import contextlib

from bot.api import (
    ApiError,
    ApiTimeout,
    ChatMessage,
    ChatRequest,
    ConnectionFailed,
    ImagineRequest,
    ProviderClient,
    RetryPolicy,
    ServerError,
    StreamInterrupted,
    Txt2ImgRequest,
)
from simulator.server import serve
from tests.bot.api.support import KEY, settings_for, sim_config

RETRY = RetryPolicy(max_attempts=12, max_total_seconds=20, base_delay=0.002, max_delay=0.02)
ECHO = " ".join(f"word{i}" for i in range(60))


async def test_reads_recover_and_creations_are_not_repeated() -> None:
    async with serve(sim_config(fault_rate=0.3, seed=11, slow_seconds=0.6)) as sim:
        settings = settings_for(sim.base_url, read_timeout=0.3)
        async with ProviderClient(settings, retry=RETRY) as api:
            created: list[str] = []
            calls = 0
            failures: list[ApiError] = []
            for i in range(30):
                calls += 1
                try:
                    created.append(
                        (await api.tasks.imagine(ImagineRequest(prompt=f"fox {i}"))).task_id
                    )
                except (ServerError, ConnectionFailed, ApiTimeout) as error:
                    failures.append(error)
            sent = sim.state.requests_to("/gen/v2/imagine")
            assert len(sent) == calls, "each imagine call sent exactly one request"
            assert failures and created
            assert sim.state.creations["imagine"] <= calls

            credits = set()
            for task_id in created:
                record = await api.tasks.fetch(task_id)
                assert record.task_id == task_id and record.is_finished
                credits.add(record.task_result.credit)
            (credit,) = credits
            assert sim.state.accounts[KEY].charged <= calls * credit
            records = await api.tasks.multi_fetch(created)
            assert all(records[task_id] is not None for task_id in created)
            faulted_reads = [r for r in sim.state.requests if r.fault and r.path.endswith("fetch")]
            assert faulted_reads, "the faults hit reads, and they recovered"

            diffusion_calls = 0
            for i in range(10):
                diffusion_calls += 1
                with contextlib.suppress(ServerError, ConnectionFailed, ApiTimeout):
                    await api.diffusion.txt2img(Txt2ImgRequest(prompt=f"fox {i}"))
            assert len(sim.state.requests_to("/diff/txt2img")) == diffusion_calls


async def test_cut_streams_raise_interrupted_with_partial_text() -> None:
    async with (
        serve(sim_config(fault_rate=0.5, seed=5, slow_seconds=0.3)) as sim,
        ProviderClient(settings_for(sim.base_url), retry=RETRY) as api,
    ):
        request = ChatRequest(
            model="llm-3.5-turbo", messages=[ChatMessage(role="user", content=f"echo: {ECHO}")]
        )
        interrupted: list[StreamInterrupted] = []
        completed = 0
        for _ in range(24):
            try:
                async with asyncio.timeout(10), api.chat.stream(request) as stream:
                    async for _chunk in stream:
                        pass
                assert stream.text == ECHO
                completed += 1
            except StreamInterrupted as error:
                interrupted.append(error)
            except (ServerError, ConnectionFailed, ApiTimeout):
                pass
        assert interrupted and completed
        for interruption in interrupted:
            assert ECHO.startswith(interruption.partial_text)
            assert interruption.partial_texts.get(0, "") == interruption.partial_text
        assert any(interruption.partial_text for interruption in interrupted)
        assert len(sim.state.requests_to("/v1/chat/completions")) == 24
