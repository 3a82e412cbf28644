"""Smoke run of the load benchmark: every phase runs, every answer and job lands."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench.load import LoadConfig, load_table, run_load


async def test_every_phase_completes_with_answers_tokens_and_posted_jobs(tmp_path: Path) -> None:
    config = LoadConfig(
        streams=3, turns=1, words=20, jobs=6, time_scale=0.02, idle_seconds=0.1,
        directory=str(tmp_path),
    )  # fmt: skip
    async with asyncio.timeout(90):
        phases = await run_load(config)
    assert [p.name for p in phases] == [
        "first answer",
        "idle",
        "chat",
        "submit 6 jobs",
        "chat + jobs in flight",
        "jobs finish",
    ]
    assert all(p.finished and p.lag and p.peak_rss_mb > 0 for p in phases)
    first, idle, chat, submit, both, finish = phases
    assert (first.answers, chat.answers, both.answers) == (1, 3, 3)
    assert idle.tokens == 0 and first.tokens >= 20 and chat.tokens >= 3 * 20
    assert both.tokens >= 3 * 20
    assert (submit.in_flight_before, finish.in_flight_after, finish.jobs_posted) == (0, 0, 6)
    assert all(p.rate_limited == 0 for p in phases)
    assert "chat + jobs in flight" in load_table(phases, config, 1.0).render()
