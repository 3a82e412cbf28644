"""❌ Cancel: genbot stops following the job, hides it, and says the service may still charge."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.features.jobs import wording
from bot.refs import NOT_YOURS
from simulator.state import SimulatorConfig
from storage import IN_FLIGHT_STATUSES
from tests.bot.features.jobs.support import press, run_command
from tests.bot.harness import PLACE, harness

MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)


@pytest.mark.parametrize("open_channel", [False, True])
async def test_cancel_hides_the_job_and_stops_tracking_it(
    tmp_path: Path, open_channel: bool
) -> None:
    channels = {"fake": frozenset({PLACE.channel_id})} if open_channel else {}
    async with harness(tmp_path, sim_config=MANUAL, open_channels=channels) as bot:
        alice, bob = bot.actor("alice"), bot.actor("bob")
        await alice.command("imagine", prompt="a fox")
        job = await bot.latest_job()
        progress = bot.progress(job)

        await bob.press(progress, "❌ Cancel")
        refused = (
            "Only the person who started this job can cancel it." if open_channel else NOT_YOURS
        )
        assert bot.platform.ephemerals_for("bob") == [refused]
        await alice.press(progress, "❌ Cancel")
        cancelled = await bot.settled(job.id)

        assert cancelled.status == "failed_posted" and cancelled.result.get("cancelled")
        assert bot.platform.ephemerals_for("alice") == [wording.CANCELLED_NOTE]
        assert "charged" in wording.CANCELLED_NOTE and "no way to cancel" in wording.CANCELLED_NOTE
        assert bot.platform.messages == {}
        assert [d.ref.message_id for d in bot.platform.deleted] == [job.progress_message_id]

        bot.sim.advance(120)
        await bot.jobs.tracker.poll_round()
        await bot.jobs.tracker.wait_idle()
        after = await bot.store.jobs.get_job(job.id)
        assert after == cancelled and bot.platform.messages == {}


async def test_a_cancelled_derivative_stays_pressed(tmp_path: Path) -> None:
    async with harness(tmp_path, sim_config=MANUAL) as bot:
        alice = bot.actor()
        await alice.command("imagine", prompt="a fox")
        parent = await bot.latest_job()
        bot.sim.advance(120)
        grid = await bot.result(parent.id)

        await alice.press(grid, "U1")
        first = await bot.latest_job()
        await alice.press(bot.progress(first), "❌ Cancel")
        await bot.settled(first.id)
        await alice.press(grid, "U1")

    assert grid.button("U1").style == "primary"
    assert bot.platform.ephemerals_for("alice") == [
        wording.CANCELLED_NOTE,
        "You already pressed this, then cancelled that job.",
    ]


async def test_pressed_buttons_are_marked_and_a_second_press_links_to_the_result(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        upscale_job, _ = await press(bot, alice, grid, "U2")

        styles = {b.label: b.style for b in grid.buttons}
        assert styles["U2"] == "primary"
        assert {style for label, style in styles.items() if label != "U2"} == {"secondary"}
        assert grid.message.images, "marking a button keeps the image"
        parent = await bot.store.jobs.get_job(grid.buttons[0].ref)
        assert parent is not None and parent.result["pressed"] == ["upscale2"]

        await alice.press(grid, "U2")
        done = await bot.settled(upscale_job.id)
        assert bot.platform.ephemerals_for("alice") == [
            "You already pressed this — [here is the result]"
            f"(https://fake.example/c1/{done.result_message_id})."
        ]
        assert grid.button("U2").style == "primary"


async def test_an_admins_cancel_of_anothers_job_is_recorded_and_the_owners_is_not(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, sim_config=MANUAL) as bot:
        alice, root = bot.actor("alice"), bot.actor("root", admin=True)
        await alice.command("imagine", prompt="a fox")
        first = await bot.latest_job()
        await alice.press(bot.progress(first), "❌ Cancel")
        await bot.settled(first.id)
        await alice.command("imagine", prompt="a cat")
        second = await bot.latest_job()
        await root.press(bot.progress(second), "❌ Cancel")
        await bot.settled(second.id)

        [entry] = await bot.store.audit.entries(PLACE.platform, PLACE.workspace_id)
        assert (entry.kind, entry.actor_id, entry.target) == ("job.cancelled", "root", second.id)
        assert entry.before["requester_id"] == "alice"
        assert entry.before["status"] in IN_FLIGHT_STATUSES, "where the poll had moved it by then"
