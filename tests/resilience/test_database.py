"""Database faults (issue 25): ``genbot run`` processes on a PostgreSQL server of their own
survive restarts, terminated backends, a stall, a killed process and a joining one — every
accepted command answered exactly once, no job created twice at the simulator, none left
unsettled, no process restarted by hand. The scenario and its checks:
:mod:`tests.resilience.database`.

``make test`` runs every fault once, one after another, on one small fleet; ``make
test-heavy`` runs each fault on its own at the issue's sizes (and the stall at 20 s).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from simulator.server import serve
from tests.postgres import DURABLE_OPTIONS, PostgresCluster, cluster_or_skip
from tests.resilience.database import (
    Fault,
    FaultOutcome,
    Sent,
    fault_scenario,
    join_one,
    kill_one,
    restart,
    stall,
    terminate_backends,
)
from tests.resilience.support import sim_config

HEAVY = (pytest.mark.heavy, pytest.mark.timeout(900))
SETTLE_BOUND = 90.0
"""No job may stay unsettled (and no command unanswered) longer than this after the faults."""
TIME_SCALE = 0.05
"""A relax grid takes 70 simulated seconds: 3.5 s here, so faults strike jobs in flight."""

EVERY_FAULT: list[tuple[float, Fault]] = [
    (2.0, terminate_backends()),
    (5.0, terminate_backends(listen_only=True)),
    (8.0, restart("fast")),
    (11.0, restart("immediate")),
    (14.0, stall(5.0)),
    (22.0, kill_one),
    (24.0, join_one),
]
"""The short version: each fault once, a few seconds apart, while commands flow."""

ON_THEIR_OWN: dict[str, list[tuple[float, Fault]]] = {
    "terminate-all": [(2.0 + 2.0 * n, terminate_backends()) for n in range(20)],
    "terminate-listen": [(2.0 + 2.0 * n, terminate_backends(listen_only=True)) for n in range(5)],
    "fast-restart": [(3.0, restart("fast")), (9.0, restart("fast"))],
    "immediate-restart": [(3.0, restart("immediate")), (9.0, restart("immediate"))],
    "stall-20s": [(3.0, stall(20.0))],
    "kill-9": [(5.0, kill_one)],
    "join": [(3.0, join_one), (8.0, join_one), (13.0, join_one)],
}
"""The issue's scenarios at full size: 300–400 commands at 20 per second."""


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[PostgresCluster]:
    """A PostgreSQL server these tests may restart, stall and cut (not the suite's), whose
    commits survive its crash (``synchronous_commit`` on, as in production)."""
    yield from cluster_or_skip(DURABLE_OPTIONS)


def check(name: str, outcome: FaultOutcome) -> None:
    print(f"{name}: {outcome.summary()}")
    problems = outcome.problems()
    assert problems == [], outcome.summary() + "\n" + "\n".join(problems)
    assert any(sent.accepted for sent in outcome.sent)


@pytest.mark.slow
@pytest.mark.timeout(300)  # 40 s on a quiet machine, over 120 s on a loaded one
async def test_every_fault_in_turn_leaves_nothing_stuck_doubled_or_lost(
    own_postgres: PostgresCluster, tmp_path: Path
) -> None:
    async with serve(sim_config(time_scale=TIME_SCALE)) as sim:
        outcome = await fault_scenario(
            sim,
            own_postgres,
            tmp_path,
            EVERY_FAULT,
            commands=100,
            rate=4.0,
            settle_bound=SETTLE_BOUND,
        )
    check("every fault", outcome)


@pytest.mark.parametrize("name", [pytest.param(name, marks=HEAVY) for name in ON_THEIR_OWN])
async def test_each_fault_at_full_size(
    name: str, own_postgres: PostgresCluster, tmp_path: Path
) -> None:
    commands = 400 if name == "join" else 300
    async with serve(sim_config(time_scale=TIME_SCALE)) as sim:
        outcome = await fault_scenario(
            sim,
            own_postgres,
            tmp_path,
            ON_THEIR_OWN[name],
            commands=commands,
            rate=20.0,
            settle_bound=SETTLE_BOUND,
        )
    check(name, outcome)


def test_a_command_sent_without_an_answer_is_also_checked_for_double_jobs() -> None:
    """A command whose sender got no HTTP answer may still have been kept and handled: two jobs
    or two creations for it are a broken promise too."""
    unanswered = Sent(7, "node0", None, "TimeoutError()", 0.0)
    jobs = [{"id": job, "status": "posted", "prompt": unanswered.prompt} for job in ("a", "b")]
    outcome = FaultOutcome(
        sent=[unanswered],
        jobs=jobs,
        answers={},
        creations=Counter({unanswered.prompt: 2}),
        unsettled=[],
        stale=[],
        exits=[],
        settle_seconds=0.0,
    )

    assert outcome.problems() == ["command 7: 2 jobs", "command 7: created 2 times"]
