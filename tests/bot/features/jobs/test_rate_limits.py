"""A provider rate limit on an image creation: waited out and shown, or refused with a time."""

from __future__ import annotations

from pathlib import Path

from simulator.server import serve
from simulator.state import SimulatorConfig
from tests.bot.features.jobs.proxy import faulty_proxy
from tests.bot.features.jobs.support import bodies
from tests.bot.harness import running_genbot

FAST = SimulatorConfig(time_scale=0.003, insecure_webhooks=True)


async def test_a_rate_limited_creation_waits_shows_it_and_starts_once(tmp_path: Path) -> None:
    async with serve(FAST) as sim, faulty_proxy(sim.base_url) as proxy:
        proxy.faults["/gen/v2/imagine"] = ["rate_limited"]
        async with running_genbot(sim, tmp_path / "genbot.db", api_url=proxy.base_url) as bot:
            await bot.actor().command("imagine", prompt="a fox")
            job = await bot.latest_job()
            grid = await bot.result(job.id)

            assert grid.message.images and len(bodies(sim, "/gen/v2/imagine")) == 1
            shown = [message.text for message in bot.progress(job).history]
            assert any(
                "the provider is rate-limiting; trying again in about 1 s" in text for text in shown
            ), shown


async def test_a_creation_limited_past_the_wait_tells_when_to_try_again(tmp_path: Path) -> None:
    async with serve(FAST) as sim, faulty_proxy(sim.base_url) as proxy:
        proxy.faults["/gen/v2/imagine"] = ["rate_limited"]
        proxy.retry_after = "600"
        async with running_genbot(sim, tmp_path / "genbot.db", api_url=proxy.base_url) as bot:
            await bot.actor().command("imagine", prompt="a fox")
            job = await bot.settled((await bot.latest_job()).id)

            assert job.status == "create_failed"
            assert bot.progress(job).text.endswith(
                "could not start: The provider is rate-limiting genbot; try again in about 10 min."
            )
            assert bodies(sim, "/gen/v2/imagine") == []
