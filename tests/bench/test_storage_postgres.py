"""Smoke run of the SQLite vs PostgreSQL storage benchmark on a tiny database: every answer
right, every claim full, the table names both backends."""

from __future__ import annotations

from bench.storage import StorageConfig, Timing
from bench.storage_postgres import comparison_table, run_postgres
from tests.postgres import PostgresCluster


async def test_postgres_answers_every_lookup_transition_and_claim(
    postgres: PostgresCluster,
) -> None:
    config = StorageConfig(rows=3000, samples=40, baseline_samples=8)
    result = await run_postgres(config, postgres)
    assert [(t.operation, t.variant) for t in result.timings] == [
        ("message → job lookup", "PostgreSQL"),
        ("message → job lookup", "PostgreSQL, driver: same SQL, one connection"),
        ("status transition", "PostgreSQL"),
        ("status transition", "PostgreSQL, driver: same SQL, one connection"),
        ("lease claim of 100 expired jobs", "PostgreSQL"),
    ]
    assert [t.correct for t in result.timings] == [40, 40, 40, 40, 10]
    assert result.server.startswith("PostgreSQL ")
    sqlite = [Timing("message → job lookup", "SQLite", 3000, [0.001], 1)]
    rendered = comparison_table(sqlite, result).render()
    assert "| SQLite" in rendered and "| PostgreSQL" in rendered
