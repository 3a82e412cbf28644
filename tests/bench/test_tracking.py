"""Smoke run of the tracking benchmark: a dozen jobs, every variant posts every result."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from bench.tracking import GENBOT, PER_TASK, WEBHOOKS, TrackingConfig, run_tracking, tracking_table

SMOKE = TrackingConfig(jobs=12, time_scale=0.02, interval=0.1, channels=3, deadline=60.0)


async def test_every_variant_posts_every_job_and_only_genbot_batches(tmp_path: Path) -> None:
    config = replace(SMOKE, directory=str(tmp_path))
    async with asyncio.timeout(90):
        rows = {row.variant: row for row in await run_tracking(config)}
    assert list(rows) == [GENBOT, PER_TASK, WEBHOOKS]
    for row in rows.values():
        assert row.finished, row
        assert (row.posted, row.creates, row.ephemerals) == (12, 12, 0), row
        assert len(row.latency) == len(row.detection) == 12
    assert 0 < rows[GENBOT].status_requests <= rows[GENBOT].cycles
    assert rows[PER_TASK].status_requests >= 12
    assert rows[WEBHOOKS].webhooks_delivered == 12
    assert "per-task fetch" in tracking_table(list(rows.values()), config).render()
