"""``/metrics`` of a real genbot for what the happy path never moves: jobs by state, job leases
and takeovers across a restart, a job the provider fails, an accepted webhook, retries and a
failover to a backup provider address."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from adapters.web.settings import WebSettings
from bot.kernel import OpsSettings
from genbot.demo import demo_settings, free_port
from genbot.runtime import Runtime, running
from genbot.settings import Settings
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.genbot.stack import playground_user
from tests.genbot.test_ops import (
    FAST_POLLING,
    Samples,
    imagines_ended,
    scrape,
    scrape_until,
    value,
)

UNFINISHED_WEB_JOB = "genbot_jobs"


@asynccontextmanager
async def ops_runtime(sim: RunningSimulator, data: Path, **api: Any) -> AsyncIterator[Runtime]:
    """genbot with the playground and the ops listener on ``sim`` (``api``: settings to change),
    its database in ``data``."""
    base = Settings(
        web=WebSettings(enabled=True, port=0),
        ops=OpsSettings(enabled=True, port=0, probe_interval_seconds=0),
        limits=FAST_POLLING,
    )
    settings = demo_settings(base, sim.base_url, sim.state.config.api_key, data)
    if api:
        settings = settings.model_copy(update={"api": settings.api.model_copy(update=api)})
    async with running(settings) as runtime:
        yield runtime


def registry_samples() -> Samples:
    """The samples ``/metrics`` would show now (for a baseline taken before genbot starts)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(generate_latest(REGISTRY).decode())
        for sample in family.samples
    }


def web_jobs(samples: Samples) -> dict[str, float]:
    """``genbot_jobs`` of the playground, by state."""
    return {
        dict(labels)["state"]: count
        for (name, labels), count in samples.items()
        if name == UNFINISHED_WEB_JOB and dict(labels).get("platform") == "web"
    }


async def test_unfinished_jobs_leases_and_takeovers_show_across_a_restart(tmp_path: Path) -> None:
    config = SimulatorConfig(insecure_webhooks=True, clock_start=time.time())
    async with serve(config) as sim:
        async with ops_runtime(sim, tmp_path) as first:
            async with playground_user(first.web_url) as user:
                await user.command("/imagine a lighthouse at dusk")
            waiting = await scrape_until(first, lambda s: sum(web_jobs(s).values()) == 1)
        assert web_jobs(waiting).keys() <= {"creating", "submitted", "pending"}

        async with ops_runtime(sim, tmp_path) as second:
            resumed = await scrape(second)
            assert value(resumed, "genbot_leases") == 1
            assert (
                value(resumed, "genbot_jobs_taken_over_total")
                - value(waiting, "genbot_jobs_taken_over_total")
                == 1
            )
            assert sum(web_jobs(resumed).values()) == 1
            sim.advance(600)
            done = await scrape_until(second, lambda s: not web_jobs(s))
        moved = value(done, "genbot_jobs_completed_total", task_type="imagine") - value(
            waiting, "genbot_jobs_completed_total", task_type="imagine"
        )
        assert moved == 1


async def test_a_job_the_provider_fails_is_counted_and_its_webhook_accepted(
    tmp_path: Path,
) -> None:
    config = SimulatorConfig(time_scale=0.01, insecure_webhooks=True)
    async with serve(config) as sim, ops_runtime(sim, tmp_path) as runtime:
        before = await scrape(runtime)
        async with playground_user(runtime.web_url) as user:
            view = await user.watch()
            await user.command("/imagine a lighthouse that should fail")
            await view.until(
                lambda: any("Simulated failure" in m["text"] for m in view.messages.values())
            )
        await sim.webhooks_idle()
        delivered = [a for a in sim.state.webhook_attempts if a.delivered]
        after = await scrape_until(runtime, lambda s: imagines_ended(before, s, "failed") > 0)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("genbot_jobs_failed_total", task_type="imagine") == 1
    assert moved("genbot_jobs_completed_total", task_type="imagine") == 0
    assert delivered
    assert moved("genbot_webhooks_total", outcome="accepted") == len(delivered)
    assert moved("genbot_webhooks_total", outcome="refused") == 0


async def test_an_unreachable_address_counts_a_retry_and_a_failover_to_the_backup(
    tmp_path: Path,
) -> None:
    unreachable = f"http://127.0.0.1:{free_port()}"
    config = SimulatorConfig(time_scale=0.01, insecure_webhooks=True)
    before = registry_samples()
    async with (
        serve(config) as sim,
        ops_runtime(sim, tmp_path, base_url=unreachable, backup_urls=[sim.base_url]) as runtime,
    ):
        async with playground_user(runtime.web_url) as user:
            view = await user.watch()
            await user.command("/imagine a lighthouse at dusk")
            await view.until(lambda: any(m["images"] for m in view.messages.values()))
        after = await scrape_until(runtime, lambda s: imagines_ended(before, s) > 0)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("genbot_provider_failovers_total") == 1
    retried = {
        dict(labels)["endpoint"]
        for (name, labels), count in after.items()
        if name == "genbot_provider_retries_total" and count > before.get((name, labels), 0.0)
    }
    assert retried
    assert moved("genbot_jobs_completed_total", task_type="imagine") == 1
