"""Caps on concurrent jobs, the daily credit budget, admin bypass — through the core."""

from __future__ import annotations

import asyncio
from pathlib import Path

from simulator.state import SimulatorConfig
from tests.bot.features.jobs.support import bodies, run_command
from tests.bot.harness import harness

MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)


async def test_the_concurrent_job_cap_refuses_commands_and_buttons(tmp_path: Path) -> None:
    limits = {"max_concurrent_jobs_per_user": 2}
    async with harness(tmp_path, sim_config=MANUAL, limits=limits) as bot:
        alice, bob = bot.actor("alice"), bot.actor("bob")
        await alice.command("imagine", prompt="a fox")
        first = await bot.latest_job()
        bot.sim.advance(120)
        grid = await bot.result(first.id)
        await alice.command("imagine", prompt="a second fox")
        await alice.command("imagine", prompt="a third fox")
        await alice.command("imagine", prompt="a fourth fox")
        await alice.press(grid, "U1")

        refusal = "You already have 2 image jobs running — the cap is 2; wait for one to finish."
        assert bot.platform.ephemerals_for("alice") == [refusal, refusal]
        assert len(bodies(bot.sim, "/gen/v2/imagine")) == 3
        assert bodies(bot.sim, "/gen/v2/upscale") == []

        await bob.command("imagine", prompt="bob's fox")
        await bot.actor("alice", admin=True).command("imagine", prompt="the admin's fox")
        assert len(bodies(bot.sim, "/gen/v2/imagine")) == 5
        assert bot.platform.ephemerals_for("bob") == []

        bot.sim.advance(120)
        for job in await bot.all_jobs():
            await bot.settled(job.id)
        await alice.command("imagine", prompt="a fox after the others")
        assert len(bodies(bot.sim, "/gen/v2/imagine")) == 6


async def test_the_daily_credit_budget_stops_new_jobs(tmp_path: Path) -> None:
    async with harness(tmp_path, limits={"daily_credit_budget_per_user": 4}) as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        await alice.command("imagine", prompt="another fox")
        await alice.press(grid, "U1")
        await alice.command("diffusion.txt2img", prompt="a fox")

        refusal = (
            "You have used 4 of your 4 credits for today — that is the daily budget; "
            "it resets at 00:00 UTC."
        )
        assert bot.platform.ephemerals_for("alice") == [refusal] * 3
        assert len(bodies(bot.sim, "/gen/v2/imagine")) == 1
        assert bodies(bot.sim, "/gen/v2/upscale") == bodies(bot.sim, "/diff/txt2img") == []

        admin = bot.actor("alice", admin=True)
        job, _ = await run_command(bot, admin, "imagine", prompt="the admin's fox")
        assert (await bot.settled(job.id)).status == "posted"
        assert (await bot.store.ledger.usage_for_user("fake", "alice")).credits == 8


async def test_concurrent_commands_cannot_all_pass_the_cap(tmp_path: Path) -> None:
    limits = {"max_concurrent_jobs_per_user": 1}
    async with harness(tmp_path, sim_config=MANUAL, limits=limits) as bot:
        alice = bot.actor("alice")
        await asyncio.gather(*(alice.command("imagine", prompt=f"fox {n}") for n in range(5)))

        assert len(bodies(bot.sim, "/gen/v2/imagine")) == 1
        refusal = "You already have 1 image job running — the cap is 1; wait for one to finish."
        assert bot.platform.ephemerals_for("alice") == [refusal] * 4
        assert len(await bot.all_jobs()) == 1
