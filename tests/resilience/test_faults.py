"""Provider faults (issue 8, item 6): with the simulator failing one request in ten, every user
request ends in its result or one clear error, and the simulator's ledger shows no job created
or charged twice. The scenario and its checks: :mod:`tests.resilience.faults`.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.kernel import Sealer
from tests.resilience.faults import FaultSize, fault_scenario
from tests.resilience.support import (
    API_KEY,
    FREE_API_KEY,
    SECRETS,
    error_records,
    leaked_secrets,
    record_lines,
)

SEED = 36
"""A seed under which every kind of fault strikes one of the 30 requests (the draws are
deterministic: see the scenario's docstring)."""


async def test_every_request_ends_in_a_result_or_one_clear_error_and_nothing_is_charged_twice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    report = await fault_scenario(tmp_path, seed=SEED, size=FaultSize())

    summary = report.summary()
    for needed in ("after_create", "before_create", ":completions", "slow"):
        assert any(needed in kind for kind in report.coverage), f"no {needed} fault; {summary}"
    assert any(not o.startswith(("result", "answer")) for o in report.outcomes.values())
    assert error_records(caplog) == []
    sealer = Sealer([API_KEY, FREE_API_KEY])
    stored = [job.webhook_secret for job in report.jobs if job.webhook_secret]
    webhook_secrets = [sealer.open(secret).secret for secret in stored]
    assert leaked_secrets(record_lines(caplog.records), [*SECRETS, *webhook_secrets]) == []
