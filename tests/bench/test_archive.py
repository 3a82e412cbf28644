"""Smoke run of the archive's search benchmark on a tiny database: every search on both
backends finds what it must, and the table names every search and both backends."""

from __future__ import annotations

from bench.archive import ArchiveConfig, archive_table, run_archive
from tests.postgres import PostgresCluster


async def test_every_search_finds_what_it_must_on_both_backends(
    postgres: PostgresCluster,
) -> None:
    config = ArchiveConfig(rows=2000, users=50, samples=10, baseline_samples=4)
    timings, setup = await run_archive(config, postgres)
    assert [(t.backend, t.found, len(t.seconds)) for t in timings] == [
        *[("SQLite", 10, 10)] * 5,
        ("SQLite, baseline: LIKE, no full-text index", 4, 4),
        *[("PostgreSQL", 10, 10)] * 5,
        ("PostgreSQL, baseline: LIKE, no full-text index", 4, 4),
    ]
    rendered = archive_table(config, timings, setup).render()
    assert "| a common word (w0)" in rendered and "| the workspace, a word (admins)" in rendered
