"""The outage log: a few lines per database outage, whatever the number of failed calls."""

from __future__ import annotations

import logging

import pytest

from bot.kernel import StorageOutage, backoff
from storage import StorageError


def test_an_outage_is_a_first_line_a_line_per_new_kind_summaries_and_a_back_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    outage = StorageOutage(summary_every=60.0, monotonic=lambda: now[0])
    caplog.set_level(logging.WARNING, logger="genbot.storage")
    down = StorageError("no database connection within the timeout")

    for second in range(150):
        now[0] = 100.0 + second
        outage.failed("lease heartbeat", down)
        outage.failed("tracker round", down)
        if second % 10 == 0:
            outage.failed("result delivery", down)
    assert outage.ongoing
    outage.succeeded()
    outage.succeeded()

    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 6, lines
    assert lines[0].startswith("genbot can't reach its database (lease heartbeat: no database")
    assert lines[1] == f"database failure in the tracker round too: {down}"
    assert lines[2] == f"database failure in the result delivery too: {down}"
    assert lines[3].startswith("database still failing after 60 s: lease heartbeat ×61")
    assert lines[4].startswith("database still failing after 120 s")
    assert lines[5] == (
        "the database is back after 149 s "
        "(lease heartbeat ×150, tracker round ×150, result delivery ×15)"
    )
    assert not outage.ongoing and all(r.exc_info is None for r in caplog.records)


def test_backoff_doubles_up_to_its_bound() -> None:
    assert [backoff(n, most=10.0) for n in range(7)] == [1, 1, 2, 4, 8, 10, 10]
