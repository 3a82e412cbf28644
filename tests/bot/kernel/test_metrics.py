"""Gauges of stored state are replaced at each refresh; the log context follows the work."""

from __future__ import annotations

import asyncio

from bot.kernel.metrics import (
    JOBS,
    LOG_JOB_ID,
    LOG_PLATFORM,
    LOG_USER_ID,
    log_fields,
    set_job_counts,
)


def test_job_counts_replace_the_previous_ones() -> None:
    set_job_counts([("pending", "web", 2), ("finished", "discord", 1)])
    set_job_counts([("pending", "web", 3)])
    samples = {
        tuple(sorted(sample.labels.items())): sample.value
        for family in JOBS.collect()
        for sample in family.samples
    }
    assert samples == {(("platform", "web"), ("state", "pending")): 3.0}


async def test_log_fields_follow_the_work_into_its_tasks_and_stay_there() -> None:
    async def read() -> dict[str, str]:
        return log_fields()

    async def job() -> dict[str, str]:
        LOG_JOB_ID.set("job-7")
        return await asyncio.create_task(read())

    async def event() -> tuple[dict[str, str], dict[str, str]]:
        LOG_PLATFORM.set("web")
        LOG_USER_ID.set("U1")
        inner = await asyncio.create_task(job())
        return inner, log_fields()

    inner, outer = await asyncio.create_task(event())
    assert inner == {"platform": "web", "user_id": "U1", "job_id": "job-7"}
    assert outer == {"platform": "web", "user_id": "U1"}
    assert log_fields() == {}
