"""❌ Cancel: the job is hidden at once and no result is posted, but the provider cannot stop
it, so it keeps its place under the user's cap, is followed until the provider is done (across a
restart), and what the provider charged lands in the user's usage."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.features.jobs import wording
from bot.refs import NOT_YOURS
from simulator.server import serve
from simulator.state import SimulatorConfig
from storage import IN_FLIGHT_STATUSES, Job
from tests.bot.features.jobs.support import press, run_command
from tests.bot.harness import PLACE, ROOMY, Genbot, harness, running_genbot
from tests.fakes.platform import FakePlatform
from tests.sim_holds import one_at_a_time

MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)
BACKENDS = ["sqlite", "postgres"]
MULTI_FETCH = "/gen/v2/multi_fetch"
"""Held while a test applies a record itself, so that no poll of the tracker ends the job
first (the simulator's clock moved on: a poll is due)."""
CAP_REFUSAL = "You already have 3 image jobs running"
TAKEOVER_WAIT = 60.0
"""On PostgreSQL a process takes over released jobs only once it has been reachable for a lease
(10 s here: a stall must not make every lease look expired), then at its next heartbeat."""


def storage_url(request: pytest.FixtureRequest, backend: str) -> str | None:
    """None for SQLite; a fresh schema of the session's PostgreSQL cluster otherwise."""
    if backend == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres").create_schema()
    return url


async def start_and_cancel(bot: Genbot, prompt: str) -> Job:
    """``alice`` starts an /imagine and cancels it; the job as the cancel left it."""
    alice = bot.actor("alice")
    await alice.command("imagine", prompt=prompt)
    job = await bot.latest_job()
    await alice.press(bot.progress(job), "❌ Cancel")
    cancelled = await bot.store.jobs.get_job(job.id)
    assert cancelled is not None
    return cancelled


@pytest.mark.parametrize("backend", BACKENDS)
async def test_cancelled_jobs_hold_the_cap_until_the_provider_ends_them_and_are_charged(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str
) -> None:
    url = storage_url(request, backend)
    async with harness(tmp_path, sim_config=MANUAL, storage_url=url) as bot:
        alice = bot.actor("alice")
        cancelled = [await start_and_cancel(bot, f"cancel probe {n}") for n in range(3)]
        assert [job.status for job in cancelled] == ["cancelled"] * 3
        assert all(job.result.get("cancelled") for job in cancelled)
        assert bot.platform.messages == {}

        await alice.command("imagine", prompt="cancel probe 3")
        assert len(await bot.all_jobs()) == 3
        assert bot.platform.ephemerals_for("alice")[-1] == (
            f"{CAP_REFUSAL} — the cap is 3; wait for one to finish. 3 of them are cancelled "
            "and still finishing at the service."
        )
        assert (await bot.store.ledger.usage_for_user("fake", "alice")).credits == 0

        bot.sim.advance(120)
        ended = [await bot.settled(job.id) for job in cancelled]
        assert [job.status for job in ended] == ["failed_posted"] * 3
        assert all(job.result.get("cancelled") and job.credits for job in ended)
        charged = sum(job.credits or 0 for job in ended)
        usage = await bot.store.ledger.usage_for_user("fake", "alice")
        assert (usage.credits, usage.entries) == (charged, 3)
        assert bot.platform.messages == {}, "no result is posted for a cancelled job"
        assert len(bot.platform.deleted) == 3, "each progress message deleted once"

        await alice.command("imagine", prompt="cancel probe 3")
        assert len(await bot.all_jobs()) == 4


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_restart_resumes_following_a_cancelled_job(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str
) -> None:
    url = storage_url(request, backend)
    platform = FakePlatform(profile=ROOMY)
    db_path = tmp_path / "genbot.db"
    async with serve(MANUAL) as sim:
        async with running_genbot(sim, db_path, platform=platform, storage_url=url) as first:
            job = await start_and_cancel(first, "a fox")
            assert job.status == "cancelled"
        sim.advance(120)
        async with running_genbot(sim, db_path, platform=platform, storage_url=url) as second:
            ended = await second.settled(job.id, timeout=TAKEOVER_WAIT)
            usage = await second.store.ledger.usage_for_user("fake", "alice")
    assert ended.status == "failed_posted" and ended.credits
    assert (usage.credits, usage.entries) == (ended.credits, 1)
    assert platform.messages == {}


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
        cancelled = await bot.store.jobs.get_job(job.id)

        assert cancelled is not None and cancelled.status == "cancelled"
        assert cancelled.result.get("cancelled")
        assert bot.platform.ephemerals_for("alice") == [wording.CANCELLED_NOTE]
        assert "charged" in wording.CANCELLED_NOTE and "no way to stop" in wording.CANCELLED_NOTE
        assert bot.platform.messages == {}
        assert [d.ref.message_id for d in bot.platform.deleted] == [job.progress_message_id]
        await alice.press(progress, "❌ Cancel")
        assert bot.platform.ephemerals_for("alice")[-1] == "This job is already cancelled."

        bot.sim.advance(120)
        ended = await bot.settled(job.id)
        assert ended.status == "failed_posted" and ended.result.get("cancelled")
        assert ended.error == cancelled.error and ended.credits
        assert bot.platform.messages == {}
        assert [d.ref.message_id for d in bot.platform.deleted] == [job.progress_message_id]


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
        await alice.command("imagine", prompt="a cat")
        second = await bot.latest_job()
        await root.press(bot.progress(second), "❌ Cancel")

        [entry] = await bot.store.audit.entries(PLACE.platform, PLACE.workspace_id)
        assert (entry.kind, entry.actor_id, entry.target) == ("job.cancelled", "root", second.id)
        assert entry.before["requester_id"] == "alice"
        assert entry.before["status"] in IN_FLIGHT_STATUSES, "where the poll had moved it by then"


async def test_a_finish_applied_to_a_job_read_before_its_cancel_ends_it_hidden_and_charged(
    tmp_path: Path,
) -> None:
    quiet = {"poll_interval_min": 60.0, "poll_interval_max": 60.0}
    async with harness(tmp_path, sim_config=MANUAL, limits=quiet) as bot:
        alice = bot.actor("alice")
        await alice.command("imagine", prompt="a fox")
        read_before = await bot.latest_job()
        await alice.press(bot.progress(read_before), "❌ Cancel")
        async with one_at_a_time(bot.sim, MULTI_FETCH):
            bot.sim.advance(120)
            assert read_before.provider_id is not None
            record = await bot.parts.provider.tasks.fetch(read_before.provider_id)
            assert record.status == "finished"

            assert await bot.jobs.tracker.apply_task_record(read_before, record)
        ended = await bot.settled(read_before.id)
        usage = await bot.store.ledger.usage_for_user("fake", "alice")

    assert ended.status == "failed_posted" and ended.result.get("cancelled")
    assert ended.credits and usage.credits == ended.credits
    assert bot.platform.messages == {}


async def test_an_admins_cancel_tells_the_requester_in_place_of_the_progress_message(
    tmp_path: Path,
) -> None:
    """The requester of a job an admin cancelled is told so where its progress was, and that
    the service may still charge it; the note stays once the provider ends the job, also when
    another process (here: after a restart) ends it."""
    platform = FakePlatform(profile=ROOMY)
    db_path = tmp_path / "genbot.db"
    async with serve(MANUAL) as sim:
        async with running_genbot(sim, db_path, platform=platform) as first:
            alice, root = first.actor("alice"), first.actor("root", admin=True)
            await alice.command("imagine", prompt="a fox")
            job = await first.latest_job()
            progress = first.progress(job)
            await root.press(progress, "❌ Cancel")
            cancelled = await first.store.jobs.get_job(job.id)
            assert cancelled is not None and cancelled.status == "cancelled"
            assert cancelled.result.get("cancelled_by_admin")
            assert platform.deleted == []
            assert progress.text == wording.admin_cancelled_text(job)
            assert "a genbot admin cancelled this job" in progress.text
            assert "charge its credits to you" in progress.text
            assert progress.message.mention_user_id == "alice" and progress.buttons == []
            assert platform.ephemerals_for("root") == [wording.CANCELLED_NOTE]
        sim.advance(120)
        async with running_genbot(sim, db_path, platform=platform) as second:
            ended = await second.settled(job.id, timeout=TAKEOVER_WAIT)
            usage = await second.store.ledger.usage_for_user("fake", "alice")
    assert ended.status == "failed_posted" and ended.credits
    assert (usage.credits, usage.entries) == (ended.credits, 1)
    assert platform.deleted == []
    assert list(platform.messages) == [job.progress_message_id]
    assert progress.text == wording.admin_cancelled_text(job)


async def test_an_admins_cancel_is_told_in_the_language_of_the_jobs_channel(
    tmp_path: Path,
) -> None:
    """The note is for the requester and everyone in the job's channel: it speaks the job's
    language (the channel's, German here), not the English of the admin who pressed Cancel."""
    async with harness(tmp_path, sim_config=MANUAL) as bot:
        await bot.store.settings.set_scope_settings(
            "channel", "fake", PLACE.channel_id, language="de"
        )
        await bot.actor("alice").command("imagine", prompt="ein Fuchs")
        job = await bot.latest_job()
        progress = bot.progress(job)
        await bot.actor("root", admin=True, locale="en").press(progress, "❌ Abbrechen")

    assert progress.spoken[-1] == "de"
    assert "ein genbot-Admin hat diesen Auftrag abgebrochen" in progress.text
    assert bot.platform.ephemerals_for("root") == [wording.CANCELLED_NOTE]
