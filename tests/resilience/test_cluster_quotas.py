"""A tier's limits hold across processes: two ``genbot run`` processes on one PostgreSQL
database, the same user starting a job on each at once, with a tier allowing one job at a time
and 4 credits a day (one image) — one job starts, the other is refused with the tier's cap;
once the job is posted, the other process refuses the next one with the tier's budget. The
counts come from the shared store, not from either process's memory."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from simulator.server import serve
from tests.postgres import PostgresCluster
from tests.resilience.cluster import running_cluster
from tests.resilience.process import Playground
from tests.resilience.support import sim_config
from tests.sim_time import freeze, resume

TIERS = [{"name": "default", "concurrent_jobs": 1, "daily_credits": 4}]


async def told(browsers: list[Playground], needle: str) -> str:
    """The first private answer containing ``needle`` any browser saw (bounded wait)."""
    deadline = time.monotonic() + 20
    while True:
        for browser in browsers:
            for message in browser.messages.values():
                if message.get("private") and needle in message["text"]:
                    return str(message["text"])
        if time.monotonic() > deadline:
            raise TimeoutError(f"no private answer with {needle!r}")
        await asyncio.sleep(0.05)


@pytest.mark.slow
async def test_a_tiers_cap_and_budget_hold_with_two_processes(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    env = {"GENBOT_QUOTAS__TIERS": json.dumps(TIERS)}
    async with (
        serve(sim_config(time_scale=0.05)) as sim,
        running_cluster(sim, postgres, tmp_path, processes=2, extra_env=env) as cluster,
    ):
        browsers = cluster.browsers
        freeze(sim)
        await asyncio.gather(
            browsers[0].command("/imagine a fox"), browsers[1].command("/imagine an owl")
        )
        cap = await told(browsers, "running")
        assert cap == (
            "You already have 1 image job running — the cap of your tier **default** is 1; "
            "wait for one to finish."
        )
        await cluster.until(
            lambda: all(j["status"] != "creating" for j in cluster.jobs()), 20, "the job sent"
        )
        assert len(cluster.jobs()) == 1, "one job: the cap holds across the two processes"

        resume(sim)
        [job] = await cluster.until(
            lambda: [j for j in cluster.jobs() if j["status"] == "posted"], 60, "the job posted"
        )
        other = (
            browsers[0] if job["owner"] != cluster.process_id(cluster.processes[0]) else browsers[1]
        )
        await other.command("/imagine a second owl")
        budget = await told(browsers, "credits for today")
        assert budget.startswith("You have used 4 of your 4 credits for today")
        assert len(cluster.jobs()) == 1
