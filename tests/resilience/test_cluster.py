"""Three ``genbot run`` processes on one PostgreSQL database: one is killed with ``kill -9``
while jobs are in flight; the others take its jobs over and every job is posted exactly once;
a button pressed on one process works on a job another process posted."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.server import serve
from tests.postgres import PostgresCluster
from tests.resilience.cluster import kill_one_during_jobs, press_across, running_cluster
from tests.resilience.support import sim_config

LEASE = 2.0
CHANNELS = ("general", "art", "lab")
HEAVY = (pytest.mark.heavy, pytest.mark.timeout(600))


def time_scale(jobs: int) -> float:
    """Simulated time for ``jobs``: a relax job lasts about as long as submitting them all
    takes (the test also holds simulated time still until the kill, so that the victim holds
    jobs in flight then on a machine however slow)."""
    return 0.05 * max(jobs, 24) / 24


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [24, pytest.param(300, marks=HEAVY)])
async def test_a_killed_processs_jobs_are_posted_once_by_the_others(
    jobs: int, postgres: PostgresCluster, tmp_path: Path
) -> None:
    async with (
        serve(sim_config(time_scale=time_scale(jobs))) as sim,
        running_cluster(sim, postgres, tmp_path, lease_seconds=LEASE) as cluster,
    ):
        report = await kill_one_during_jobs(cluster, jobs, channels=CHANNELS, hold=sim)
        took = f"{report.takeover_seconds:.1f} s for {report.held_by_victim} jobs"
        print(f"takeover after kill -9: {took}")
        assert report.held_by_victim > 0, "the victim held jobs when it died"
        assert [j["status"] for j in report.jobs] == ["posted"] * jobs
        assert set(report.result_links.values()) == {1} and len(report.result_links) == jobs
        assert set(report.result_messages.values()) == {1}
        assert len(report.result_messages) == jobs

        upscale = await press_across(cluster, poster=1, presser=2)
        assert upscale["status"] == "posted" and upscale["action"] == "upscale1"
        assert cluster.result_links()[upscale["id"]] == 1
