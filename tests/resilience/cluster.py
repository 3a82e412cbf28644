"""The cluster scenario: several ``genbot run`` processes on one PostgreSQL database (each with
the web playground), image jobs submitted through all of them, one killed with ``kill -9``
while its jobs are in flight. The others take its jobs over once its leases run out and every
job is posted exactly once. Used by the fast test (``test_cluster.py``) and the scale
benchmark (``bench/scale.py``).

"Posted exactly once" is counted in the database: one ``result`` link per job, and one result
message per job in the playground's history (a keyed retry would reuse it, a duplicate would
show twice). The takeover time runs from the ``kill -9`` until no unfinished job is held by the
dead process any more.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from adapters.web.journal import restored
from simulator.server import RunningSimulator
from tests.postgres import PostgresCluster
from tests.resilience.process import GenbotProcess, Message, Playground, custom_id, job_of
from tests.resilience.support import API_KEY
from tests.sim_time import freeze, resume

SETTLED = frozenset({"posted", "failed_posted", "create_failed"})
PROMPT = "cluster test {number} a lighthouse at dusk"
POLL_SECONDS = 0.1
"""How often the scenario reads the database while it waits (other processes change it)."""


def cluster_env(sim: RunningSimulator, url: str, lease_seconds: float) -> dict[str, str]:
    """``genbot run`` settings: the playground only, PostgreSQL, polling (no webhooks)."""
    return {
        "GENBOT_WEB__ENABLED": "true",
        "GENBOT_API__BASE_URL": sim.base_url,
        "GENBOT_API__KEY": API_KEY,
        "GENBOT_API__READ_TIMEOUT": "10",
        "GENBOT_STORAGE__URL": url,
        "GENBOT_STORAGE__POOL_SIZE": "8",
        "GENBOT_STORAGE__LEASE_SECONDS": str(lease_seconds),
        "GENBOT_LIMITS__MAX_CONCURRENT_JOBS_PER_USER": "100000",
        "GENBOT_LIMITS__DAILY_CREDIT_BUDGET_PER_USER": "100000000",
        "GENBOT_LIMITS__POLL_INTERVAL_MIN": "0.2",
        "GENBOT_LIMITS__POLL_INTERVAL_MAX": "1.0",
    }


def query(url: str, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        return conn.execute(sql, args).fetchall()


def is_result(message: Message) -> bool:
    return bool(message["kind"] == "bot" and message["images"] and message["buttons"])


@dataclass
class Cluster:
    """The running processes, a browser on each (one user: the session key is the cluster's),
    and the database they share."""

    url: str
    processes: list[GenbotProcess]
    browsers: list[Playground]

    def jobs(self) -> list[dict[str, Any]]:
        return query(self.url, "SELECT id, status, owner, parent_job_id, action FROM jobs")

    def process_id(self, process: GenbotProcess) -> str | None:
        assert process.process is not None
        rows = query(self.url, "SELECT id FROM processes WHERE pid = %s", (process.process.pid,))
        return str(rows[0]["id"]) if rows else None

    def result_links(self) -> Counter[str]:
        rows = query(self.url, "SELECT job_id FROM job_messages WHERE kind = 'result'")
        return Counter(str(row["job_id"]) for row in rows)

    def result_messages(self) -> Counter[str]:
        """Result messages in the playground's shared history, per job."""
        rows = query(self.url, "SELECT body FROM playground_messages")
        shown = [restored(row["body"], False).to_json() for row in rows]
        return Counter(job_of(message) for message in shown if is_result(message))

    async def until(self, condition: Any, timeout: float, what: str) -> Any:
        """Poll the database (bounded) until ``condition()`` is truthy; return it."""
        deadline = time.monotonic() + timeout
        while not (value := condition()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"gave up waiting for {what}")
            await asyncio.sleep(POLL_SECONDS)
        return value


@asynccontextmanager
async def running_cluster(
    sim: RunningSimulator,
    postgres: PostgresCluster,
    workdir: Path,
    *,
    processes: int = 3,
    lease_seconds: float = 2.0,
    extra_env: dict[str, str] | None = None,
) -> AsyncIterator[Cluster]:
    url = postgres.create_database()
    env = cluster_env(sim, url, lease_seconds) | (extra_env or {})
    started = [GenbotProcess(env, workdir, f"node{n}") for n in range(processes)]
    async with AsyncExitStack() as stack:
        for process in started:
            stack.push_async_callback(process.kill)
        await asyncio.gather(*(process.start() for process in started))
        first = await stack.enter_async_context(Playground(started[0].url))
        browsers = [first] + [
            await stack.enter_async_context(
                Playground(process.url, session_cookie=first.session_cookie)
            )
            for process in started[1:]
        ]
        yield Cluster(url, started, browsers)


@dataclass
class KillReport:
    """What a kill left, and how the survivors took it over."""

    submitted: int
    jobs: list[dict[str, Any]]
    held_by_victim: int
    takeover_seconds: float
    result_links: Counter[str]
    result_messages: Counter[str]


async def kill_one_during_jobs(
    cluster: Cluster,
    jobs: int,
    *,
    settle_timeout: float = 120.0,
    channels: Sequence[str] = ("general",),
    hold: RunningSimulator | None = None,
) -> KillReport:
    """Submit ``jobs`` through every process in turn (the first share of them in the first
    of ``channels``, and so on: the playground keeps the latest 500 messages of a channel),
    ``kill -9`` the first process once they all reached the provider (in flight there), and
    wait until every job is settled. With ``hold``, that simulator's time stands still until
    the kill, so that the jobs are still in flight then however slowly they were submitted."""
    if hold is not None:
        freeze(hold)
    for number in range(jobs):
        browser = cluster.browsers[number % len(cluster.browsers)]
        channel = channels[number * len(channels) // jobs]
        await browser.command("/imagine " + PROMPT.format(number=number), channel=channel)

    def submitted() -> bool:
        found = cluster.jobs()
        return len(found) >= jobs and all(j["status"] != "creating" for j in found)

    await cluster.until(submitted, 60, "every job to reach the provider")
    victim = cluster.processes[0]
    victim_id = cluster.process_id(victim)

    def held() -> list[dict[str, Any]]:
        return [j for j in cluster.jobs() if j["owner"] == victim_id and j["status"] not in SETTLED]

    held_at_kill = len(held())
    killed_at = time.monotonic()
    await victim.kill()
    if hold is not None:
        resume(hold)
    await cluster.until(lambda: not held(), settle_timeout, "the survivors to take over")
    takeover = time.monotonic() - killed_at
    settled = await cluster.until(
        lambda: (found := cluster.jobs()) and all(j["status"] in SETTLED for j in found) and found,
        settle_timeout,
        "every job to settle",
    )
    with contextlib.suppress(Exception):
        await cluster.browsers[0].drain(0.1)
    return KillReport(
        jobs, settled, held_at_kill, takeover, cluster.result_links(), cluster.result_messages()
    )


async def press_across(cluster: Cluster, poster: int, presser: int) -> dict[str, Any]:
    """Press U1 through process ``presser`` on a result process ``poster`` posted; the
    derivative job once it settled."""
    poster_id = cluster.process_id(cluster.processes[poster])
    browser = cluster.browsers[presser]
    owned = {j["id"] for j in cluster.jobs() if j["owner"] == poster_id and j["status"] == "posted"}
    message = await browser.until(
        lambda: next((m for m in browser.results().values() if job_of(m) in owned), None),
        30,
        "a result the other process posted",
    )
    status, answer = await browser.press(message["id"], custom_id(message, "U1"))
    assert status == 202, answer
    parent = job_of(message)
    settled: dict[str, Any] = await cluster.until(
        lambda: next(
            (j for j in cluster.jobs() if j["parent_job_id"] == parent and j["status"] in SETTLED),
            None,
        ),
        60,
        "the upscale to settle",
    )
    return settled
