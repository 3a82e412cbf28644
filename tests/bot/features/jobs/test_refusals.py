"""A follow-up the provider refuses is named to the presser, privately, and disabled on the
pressed message."""

from __future__ import annotations

from pathlib import Path

from tests.bot.features.jobs.support import bodies, press, raw_press, run_command
from tests.bot.harness import harness


async def test_a_refused_follow_up_is_named_and_its_button_disabled(tmp_path: Path) -> None:
    # "--v 5.3" is no version the simulator knows: with the prompt check skipped it runs the
    # task as version 6, while genbot's documented rules read 5.x and offer Upscale (2x).
    async with harness(tmp_path, dialect="spec") as bot:
        alice = bot.actor()
        _, grid = await run_command(
            bot, alice, "imagine", prompt="a red fox --v 5.3", skip_prompt_check=True
        )
        up_job, upscale = await press(bot, alice, grid, "U1")
        assert not upscale.button("Upscale (2x)").disabled

        await alice.press(upscale, "Upscale (2x)")
        refused_job = await bot.latest_job()

        refused = await bot.settled(refused_job.id)
        assert (refused.status, refused.progress_message_id) == ("create_failed", None)
        [told] = bot.platform.ephemerals_for("alice")
        assert told.startswith("The service refused Upscale (2x) on this image: upscale index 2x")
        deleted = [m for m in bot.platform.deleted if refused_job.id in {b.ref for b in m.buttons}]
        assert len(deleted) == 1, "its card left the channel"
        assert upscale.button("Upscale (2x)").disabled
        assert not upscale.button("Upscale (4x)").disabled
        assert upscale.message.images, "redrawing the buttons keeps the image"
        stored = await bot.store.jobs.get_job(up_job.id)
        assert stored is not None and stored.result["refused_actions"] == ["upscale_2x"]

        await alice.core.handle(raw_press(alice, upscale, "upscale_2x", up_job.id))
        assert bot.platform.ephemerals_for("alice")[-1] == (
            "The service refused that on this image, so the button is disabled."
        )
        assert len(bodies(bot.sim, "/gen/v2/upscale")) == 2


async def test_a_refusal_for_credits_disables_nothing(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        for account in bot.sim.state.accounts.values():
            account.balance = 0
        await alice.press(grid, "U1")
        refused_job = await bot.latest_job()

        assert (await bot.settled(refused_job.id)).status == "create_failed"
        assert not grid.button("U1").disabled
