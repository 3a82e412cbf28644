"""The ops listener of a real genbot (simulator, web playground, ``[ops] enabled``, port 0):
``/healthz``, ``/readyz`` flipping to 503 for each failure mode, and ``/metrics`` parsed with
``prometheus_client.parser`` whose counters move when a job runs against the simulator."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession
from prometheus_client.parser import text_string_to_metric_families

from adapters.web.settings import WebSettings
from bot.kernel import LimitsSettings, OpsSettings
from genbot.demo import demo_settings, free_port
from genbot.ops import CheckResult, run_check
from genbot.runtime import Runtime, running
from genbot.settings import Settings
from genbot.webhooks import webhook_base_url
from simulator.server import serve
from simulator.state import SimulatorConfig
from storage import SqliteStore
from tests.genbot.stack import playground_user

FAST_POLLING = LimitsSettings(poll_interval_min=0.01, poll_interval_max=0.1)
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
LOOP_LAG = "genbot_event_loop_lag_seconds_count"
SCRAPE_WAIT = 10.0


@asynccontextmanager
async def ops_stack(tmp_path: Path, api_url: str | None = None) -> AsyncIterator[Runtime]:
    """genbot with the playground and the ops listener, on the simulator (or ``api_url``)."""
    config = SimulatorConfig(time_scale=0.01, insecure_webhooks=True)
    async with serve(config) as sim:
        base = Settings(
            web=WebSettings(enabled=True, port=0),
            ops=OpsSettings(enabled=True, port=0, probe_interval_seconds=0),
            limits=FAST_POLLING,
        )
        settings = demo_settings(base, sim.base_url, config.api_key, tmp_path)
        if api_url is not None:
            settings = settings.model_copy(
                update={"api": settings.api.model_copy(update={"base_url": api_url})}
            )
        async with running(settings) as runtime:
            yield runtime


def ops_url(runtime: Runtime) -> str:
    assert runtime.ops is not None
    return runtime.ops.url


async def get(url: str) -> tuple[int, str, str]:
    async with ClientSession() as session, session.get(url) as response:
        return response.status, response.headers["Content-Type"], await response.text()


async def ready(runtime: Runtime) -> tuple[int, dict[str, Any]]:
    async with ClientSession() as session, session.get(ops_url(runtime) + "/readyz") as response:
        return response.status, await response.json()


async def scrape(runtime: Runtime) -> Samples:
    status, content_type, text = await get(ops_url(runtime) + "/metrics")
    assert status == 200 and content_type.startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def imagines_ended(before: Samples, after: Samples, outcome: str = "completed") -> float:
    """Imagine jobs counted ``completed`` (or ``failed``) between the two scrapes. A job is
    counted once its outcome is recorded, after the message showing it was written: a browser
    may see the message before the count moves."""
    name = f"genbot_jobs_{outcome}_total"
    return value(after, name, task_type="imagine") - value(before, name, task_type="imagine")


async def scrape_until(runtime: Runtime, seen: Callable[[Samples], bool]) -> Samples:
    """Scrape until ``seen(samples)`` holds (bounded)."""
    async with asyncio.timeout(SCRAPE_WAIT):
        while True:
            samples = await scrape(runtime)
            if seen(samples):
                return samples
            await asyncio.sleep(0.05)


async def test_healthz_answers_alive(tmp_path: Path) -> None:
    async with ops_stack(tmp_path) as runtime:
        status, content_type, text = await get(ops_url(runtime) + "/healthz")
    assert status == 200 and content_type.startswith("application/json")
    assert '"alive"' in text


async def test_readyz_is_200_with_every_check_passing(tmp_path: Path) -> None:
    async with ops_stack(tmp_path) as runtime:
        status, body = await ready(runtime)
    assert status == 200, body
    assert set(body["checks"]) == {"started", "stopping", "storage", "provider", "web"}
    assert all(check["ok"] for check in body["checks"].values()), body


async def _not_started(runtime: Runtime) -> None:
    runtime.started = False


async def _stopping(runtime: Runtime) -> None:
    await runtime.drain()


async def _schema_behind(runtime: Runtime) -> None:
    await asyncio.to_thread(_drop_latest_version, runtime.settings.storage.path)


def _drop_latest_version(path: Path) -> None:
    """In a thread of its own: a transaction of the runtime's that waits on the event loop
    holds SQLite's write lock until the loop runs it on."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute(
            "DELETE FROM schema_version WHERE version = (SELECT MAX(version) FROM schema_version)"
        )
        db.commit()


async def _database_closed(runtime: Runtime) -> None:
    await runtime.store.close()


async def _database_read_only(runtime: Runtime) -> None:
    store = runtime.store
    assert isinstance(store, SqliteStore)
    await store.db.run(lambda db: db.execute("PRAGMA query_only = 1"))


async def _playground_down(runtime: Runtime) -> None:
    await runtime.adapters["web"].stop()


@pytest.mark.parametrize(
    ("break_it", "failing"),
    [
        (_not_started, "started"),
        (_stopping, "stopping"),
        (_schema_behind, "storage"),
        (_database_closed, "storage"),
        (_database_read_only, "storage"),
        (_playground_down, "web"),
    ],
)
async def test_each_failure_mode_makes_readyz_503(
    tmp_path: Path, break_it: Callable[[Runtime], Awaitable[None]], failing: str
) -> None:
    async with ops_stack(tmp_path) as runtime:
        assert (await ready(runtime))[0] == 200
        await break_it(runtime)
        status, body = await ready(runtime)
    assert status == 503, body
    assert body["status"] == "not ready"
    assert [name for name, check in body["checks"].items() if not check["ok"]] == [failing]


async def test_readyz_is_503_while_the_provider_does_not_answer(tmp_path: Path) -> None:
    unreachable = f"http://127.0.0.1:{free_port()}"
    async with ops_stack(tmp_path, api_url=unreachable) as runtime:
        status, body = await ready(runtime)
    assert status == 503, body
    assert not body["checks"]["provider"]["ok"]
    assert body["checks"]["provider"]["detail"] == "the provider has not answered yet"


async def test_metrics_move_when_a_job_runs_against_the_simulator(tmp_path: Path) -> None:
    async with ops_stack(tmp_path) as runtime:
        before = await scrape(runtime)
        async with playground_user(runtime.web_url) as user:
            view = await user.watch()
            await user.command("/imagine a lighthouse at dusk")
            await view.until(lambda: any(m["images"] for m in view.messages.values()))
            asked = await user.command("/chat echo: a lighthouse keeper counts the waves")
            await view.until(lambda: view.handled(asked))
        async with ClientSession() as session:
            hook = f"{webhook_base_url(runtime.settings)}/no-such-job"
            async with session.post(hook, json={"task_id": "t"}) as refused:
                assert refused.status == 401
        after = await scrape_until(
            runtime,
            lambda s: (
                value(s, LOOP_LAG) > value(before, LOOP_LAG) and imagines_ended(before, s) > 0
            ),
        )

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("genbot_jobs_created_total", task_type="imagine") == 1
    assert moved("genbot_jobs_completed_total", task_type="imagine") == 1
    assert moved("genbot_job_finished_to_posted_seconds_count", platform="web") == 1
    assert moved("genbot_provider_requests_total", endpoint="/gen/v2/imagine", status="200") == 1
    assert moved("genbot_provider_request_seconds_count", endpoint="/gen/v2/imagine") == 1
    assert moved("genbot_platform_writes_total", platform="web", method="send") >= 2
    assert moved("genbot_platform_writes_total", platform="web", method="edit") >= 1
    assert moved("genbot_edit_budget_wait_seconds_count", platform="web", priority="urgent") >= 1
    assert moved("genbot_events_total", platform="web", kind="Command", outcome="handled") == 2
    assert moved("genbot_chat_tokens_total", direction="in") > 0
    assert moved("genbot_chat_tokens_total", direction="out") > 0
    assert moved("genbot_chat_stream_staleness_seconds_count", platform="web") >= 1
    assert value(after, "genbot_chat_streams_active") == 0
    assert moved("genbot_webhooks_total", outcome="refused") == 1
    assert moved(LOOP_LAG) >= 1
    names = {name for name, _ in after}
    assert all(name.startswith(("genbot_", "python_", "process_")) for name in names), names


async def test_a_check_that_hangs_is_answered_within_the_bound_not_awaited() -> None:
    cancelled = asyncio.Event()
    finish = asyncio.Event()

    async def stalled() -> CheckResult:
        try:
            await asyncio.sleep(3600)
        finally:
            cancelled.set()
            await asyncio.shield(finish.wait())
        raise AssertionError("unreachable")

    result = await run_check(stalled, timeout=0.05)

    assert result == CheckResult(False, "no answer within 0.05 s")
    await asyncio.wait_for(cancelled.wait(), 5)
    finish.set()
