"""Smoke run of the storage benchmark on a tiny database: every answer right, plans as claimed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench.storage import StorageConfig, run_storage, storage_table


async def test_lookups_and_transitions_are_correct_and_only_the_baseline_scans(
    tmp_path: Path,
) -> None:
    config = StorageConfig(rows=3000, samples=40, baseline_samples=8, directory=str(tmp_path))
    result = await run_storage(config)
    assert [(t.operation, t.variant.split()[0]) for t in result.timings] == [
        ("message → job lookup", "genbot"),
        ("message → job lookup", "driver:"),
        ("message → job lookup", "baseline:"),
        ("status transition", "genbot"),
        ("status transition", "driver:"),
        ("status transition", "baseline:"),
    ]
    for timing in result.timings:
        assert timing.rows == 3000
        assert len(timing.seconds) == timing.correct
    assert [t.correct for t in result.timings] == [40, 40, 8, 40, 40, 8]
    assert "USING INDEX job_messages_by_message_id" in result.plans["lookup, genbot"]
    assert "SCAN m" in result.plans["lookup, baseline"]
    assert "USING INDEX" in result.plans["transition, genbot"]
    assert result.plans["transition, baseline"].startswith("SCAN plain_jobs")
    assert not await asyncio.to_thread(lambda: list(tmp_path.iterdir()))
    assert "baseline: same SQL, no index" in storage_table(result).render()
