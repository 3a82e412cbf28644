"""The image engine (family B) end to end: fake platform → core → simulator over HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from simulator.state import Dialect, SimulatorConfig
from tests.bot.features.jobs.support import (
    GRID_LABELS,
    bodies,
    image_size,
    mask_pixels,
    press,
    raw_press,
    run_command,
    submission,
)
from tests.bot.harness import harness

DIALECTS = pytest.mark.parametrize("dialect", ["default", "spec"])
"""Every button a user sees against the simulator's default dialect must still be offered and
work against a provider that sends only the documented actions (none on derivatives)."""
V6_UPSCALE_LABELS = [
    "Vary (Strong)",
    "Vary (Subtle)",
    "Vary (Region)",
    "Zoom Out 2x",
    "Zoom Out 1.5x",
    "Custom Zoom",
    "⬅️",
    "➡️",
    "⬆️",
    "⬇️",
    "Upscale (Subtle)",
    "Upscale (Creative)",
    "🌱 Seed",
    "Use as reference",
    "ℹ️",
]


async def test_imagine_posts_the_grid_with_its_buttons_and_records_credits(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        job, grid = await run_command(bot, alice, "imagine", prompt="a red fox --v 6")

        assert [b.label for b in grid.buttons] == GRID_LABELS
        assert {b.ref for b in grid.buttons} == {job.id}
        assert grid.message.mention_user_id == "alice"
        assert "a red fox" in grid.text
        task = bot.sim.state.tasks[(await bot.settled(job.id)).provider_id or ""]
        served = await bot.jobs.media.fetch(f"{bot.sim.base_url}/images/{task.image_id}.png")
        assert grid.message.images[0].data == served.data
        assert image_size(served.data) == (512, 512)

        done = await bot.settled(job.id)
        assert done.status == "posted" and done.result_message_id == grid.ref.message_id
        assert done.progress_message_id == grid.ref.message_id
        assert (
            await bot.store.message_links.job_for_message("fake", "c1", grid.ref.message_id) == done
        )
        assert grid.history[0].text.startswith("⏳ **Imagine** — a red fox")
        assert grid.text == "**Imagined** — a red fox --v 6 (relax)"
        assert list(bot.platform.messages) == [grid.ref.message_id]
        assert (await bot.store.ledger.usage_for_user("fake", "alice")).credits == 4
        (sent,) = bodies(bot.sim, "/gen/v2/imagine")
        assert sent["prompt"] == "a red fox --v 6" and "webhook_endpoint" not in sent
        assert bot.sim.state.requests_to("/gen/v2/multi_fetch")


@DIALECTS
async def test_upscale_offers_the_follow_ups_its_version_allows(
    tmp_path: Path, dialect: Dialect
) -> None:
    async with harness(tmp_path, dialect=dialect) as bot:
        alice = bot.actor()
        grid_job, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        up_job, upscale = await press(bot, alice, grid, "U2")

        assert [b.label for b in upscale.buttons] == V6_UPSCALE_LABELS
        sent_actions = (await bot.settled(up_job.id)).actions
        assert (sent_actions == []) == (dialect == "spec")
        (sent,) = bodies(bot.sim, "/gen/v2/upscale")
        assert sent == {"origin_task_id": grid_job.provider_id, "index": "2"}
        assert up_job.parent_job_id == grid_job.id and up_job.action == "upscale2"
        assert image_size(upscale.message.images[0].data) == (384, 384)
        _, subtle = await press(bot, alice, upscale, "Upscale (Subtle)")
        assert bodies(bot.sim, "/gen/v2/upscale")[1] == {
            "origin_task_id": up_job.provider_id,
            "index": "subtle",
        }
        assert image_size(subtle.message.images[0].data) == (512, 512)

        _, old_grid = await run_command(bot, alice, "imagine", prompt="a fox --v 5 --ar 16:9")
        _, old_upscale = await press(bot, alice, old_grid, "U1")
        labels = [b.label for b in old_upscale.buttons]
        assert "Upscale (2x)" in labels and "Upscale (4x)" in labels and "Make Square" in labels
        assert "Vary (Strong)" not in labels and "Upscale (Subtle)" not in labels


@DIALECTS
async def test_variation_reroll_and_vary_keep_the_origin_and_its_aspect(
    tmp_path: Path, dialect: Dialect
) -> None:
    async with harness(tmp_path, dialect=dialect) as bot:
        alice = bot.actor()
        grid_job, grid = await run_command(
            bot, alice, "imagine", prompt="a red fox", aspect_ratio="3:2"
        )
        _, variation = await press(bot, alice, grid, "V1")
        _, _ = await press(bot, alice, grid, "🔄")
        up_job, upscale = await press(bot, alice, variation, "U3")
        await press(bot, alice, upscale, "Vary (Strong)")
        await press(bot, alice, upscale, "Vary (Subtle)")

        assert bodies(bot.sim, "/gen/v2/reroll") == [
            {"origin_task_id": grid_job.provider_id, "aspect_ratio": "3:2"}
        ]
        first, strong, subtle = bodies(bot.sim, "/gen/v2/variation")
        assert first == {
            "origin_task_id": grid_job.provider_id,
            "index": "1",
            "aspect_ratio": "3:2",
        }
        assert strong["index"] == "high_variation" and subtle["index"] == "low_variation"
        assert strong["origin_task_id"] == subtle["origin_task_id"] == up_job.provider_id
        assert [b.label for b in variation.buttons] == GRID_LABELS


@DIALECTS
async def test_zoom_square_and_pan_send_the_upscale_as_origin(
    tmp_path: Path, dialect: Dialect
) -> None:
    async with harness(tmp_path, dialect=dialect) as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox --ar 16:9")
        up_job, upscale = await press(bot, alice, grid, "U4")
        _, zoomed = await press(bot, alice, upscale, "Zoom Out 2x")
        _, square = await press(bot, alice, upscale, "Make Square")
        _, panned = await press(bot, alice, upscale, "⬅️")

        zoom, make_square = bodies(bot.sim, "/gen/v2/outpaint")
        assert zoom == {"origin_task_id": up_job.provider_id, "zoom_ratio": "2"}
        assert make_square == {"origin_task_id": up_job.provider_id, "zoom_ratio": "1"}
        assert bodies(bot.sim, "/gen/v2/pan") == [
            {"origin_task_id": up_job.provider_id, "direction": "left"}
        ]
        assert image_size(square.message.images[0].data) == (512, 512)
        assert image_size(panned.message.images[0].data)[0] == 512
        assert zoomed.buttons and square.buttons


async def test_a_custom_zoom_just_above_one_is_sent_and_shown_as_typed(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        up_job, upscale = await press(bot, alice, grid, "U1")
        await alice.press(upscale, "Custom Zoom")
        _, modal = bot.platform.modals[-1]
        await alice.submit(modal, zoom="", zoom_value="1.0000001", prompt="")
        zoomed = await bot.result((await bot.latest_job()).id)

        assert bodies(bot.sim, "/gen/v2/outpaint") == [
            {"origin_task_id": up_job.provider_id, "zoom_ratio": "1.0000001"}
        ], "not rounded to 1, which is Make Square"
        assert zoomed.text.startswith("**Zoomed out 1.0000001×**")


async def test_custom_zoom_form_is_idempotent_per_value(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        up_job, upscale = await press(bot, alice, grid, "U1")

        await alice.press(upscale, "Custom Zoom")
        _, modal = bot.platform.modals[-1]
        assert modal.action == "outpaint_custom" and modal.ref == up_job.id
        assert [f.id for f in modal.fields] == ["zoom", "zoom_value", "prompt"]
        await alice.submit(modal, zoom="1.8x", prompt="")
        zoom_job = await bot.latest_job()
        zoomed = await bot.result(zoom_job.id)
        assert zoomed.text.startswith("**Zoomed out 1.8×** — a red fox")
        await alice.submit(modal, zoom="1.80", prompt="")
        await alice.submit(modal, zoom="1.6", prompt="a wider fox")
        other = await bot.latest_job()
        await bot.result(other.id)

        first, second = bodies(bot.sim, "/gen/v2/outpaint")
        assert first == {"origin_task_id": up_job.provider_id, "zoom_ratio": "1.8"}
        assert second == {
            "origin_task_id": up_job.provider_id,
            "zoom_ratio": "1.6",
            "prompt": "a wider fox",
        }
        assert bot.platform.ephemerals_for("alice") == [
            "You already pressed this — [here is the result]"
            f"(https://fake.example/c1/{zoom_job.progress_message_id})."
        ]


@DIALECTS
async def test_vary_region_sends_a_mask_of_the_upscale_size(
    tmp_path: Path, dialect: Dialect
) -> None:
    async with harness(tmp_path, dialect=dialect) as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox --ar 2:1")
        up_job, upscale = await press(bot, alice, grid, "U1")
        await alice.press(upscale, "Vary (Region)")
        _, modal = bot.platform.modals[-1]
        await alice.submit(modal, region="left half", prompt="a blue hat")
        job = await bot.latest_job()
        await bot.result(job.id)

        (sent,) = bodies(bot.sim, "/gen/v2/inpaint")
        assert sent["origin_task_id"] == up_job.provider_id and sent["prompt"] == "a blue hat"
        mask = mask_pixels(sent["mask"])
        assert mask.size == image_size(upscale.message.images[0].data) == (384, 192)
        assert mask.getpixel((10, 100)) == 255 and mask.getpixel((300, 100)) == 0


async def test_bad_form_input_is_refused_without_a_provider_call(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        up_job, _ = await press(bot, alice, grid, "U1")
        jobs_before = len(await bot.all_jobs())
        typed = "zoom_value"
        await alice.core.handle(submission(alice, "outpaint_custom", up_job.id, **{typed: "3"}))
        await alice.core.handle(submission(alice, "outpaint_custom", up_job.id, **{typed: "wide"}))
        await alice.core.handle(submission(alice, "vary_region", up_job.id, region="the sky"))
        await alice.core.handle(submission(alice, "vary_region", up_job.id, region="10,10,95,50"))

        assert bot.platform.ephemerals_for("alice") == []
        again = [modal for _, modal in bot.platform.modals]
        assert [m.refusal for m in again] == [
            "The zoom must be above 1 and at most 2 (got 3).",
            "The zoom must be a number above 1, at most 2 (got 'wide').",
            "I don't know the region 'the sky'. Give a preset such as 'left half', 'center', "
            "'top right', or x,y,w,h in percent.",
            "The region '10,10,95,50' goes past the image's edge: x + w and y + h must be at "
            "most 100.",
        ]
        assert [m.fields[0].default for m in again] == ["", "", "", ""]
        assert [m.fields[1].default for m in again] == ["3", "wide", "the sky", "10,10,95,50"]
        assert bodies(bot.sim, "/gen/v2/outpaint") == bodies(bot.sim, "/gen/v2/inpaint") == []
        assert len(await bot.all_jobs()) == jobs_before


async def test_forged_or_stale_buttons_are_refused_without_a_provider_call(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        grid_job, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        await alice.core.handle(raw_press(alice, grid, "outpaint_2", grid_job.id))
        await alice.core.handle(raw_press(alice, grid, "vary_region", grid_job.id))
        await alice.core.handle(submission(alice, "outpaint_custom", grid_job.id, zoom="1.5"))
        await alice.core.handle(raw_press(alice, grid, "diff_reroll", grid_job.id))
        await alice.core.handle(raw_press(alice, grid, "upscale1", "nosuchjob"))
        await alice.core.handle(raw_press(alice, grid, "upscale2", ""))
        unknown = dataclasses.replace(raw_press(alice, grid, "upscale3", "x"), message_id="m999")
        await alice.core.handle(unknown)

        not_here = "That button does not apply to this image."
        assert bot.platform.ephemerals_for("alice") == [
            not_here,
            not_here,
            not_here,
            "That button does not work on this message.",
            "genbot has no record of this image any more.",
        ]
        assert bodies(bot.sim, "/gen/v2/outpaint") == [] and bot.platform.modals == []
        by_message = bodies(bot.sim, "/gen/v2/upscale")
        assert by_message == [
            {"origin_task_id": grid_job.provider_id, "index": index} for index in ("1", "2")
        ]


@DIALECTS
async def test_seed_replies_with_the_seed_value(tmp_path: Path, dialect: Dialect) -> None:
    async with harness(tmp_path, dialect=dialect) as bot:
        alice = bot.actor()
        grid_job, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        seed_job, reply = await press(bot, alice, grid, "🌱 Seed")

        expected = bot.sim.state.tasks[grid_job.provider_id or ""].art_seed
        assert f"`{expected}`" in reply.text and reply.buttons == []
        assert bodies(bot.sim, "/gen/v2/seed") == [{"task_id": grid_job.provider_id}]
        assert seed_job.webhook_secret is None


async def test_a_failing_task_reports_the_providers_error_and_no_charge(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        job, report = await run_command(bot, alice, "imagine", prompt="please fail now")

        done = await bot.settled(job.id)
        assert done.status == "failed_posted"
        assert "Simulated failure: the prompt asked the job to fail." in report.text
        assert "No credits were charged" in report.text
        assert report.message.mention_user_id == "alice" and not report.message.images
        assert bot.progress(done).text.startswith("❌")
        assert (await bot.store.ledger.usage_for_user("fake", "alice")).credits == 0
        assert bot.sim.state.accounts["sim-key"].charged == 0


async def test_insufficient_credit_is_a_specific_refusal(tmp_path: Path) -> None:
    config = SimulatorConfig(time_scale=0.003, credits=3)
    async with harness(tmp_path, sim_config=config) as bot:
        alice = bot.actor()
        await alice.command("imagine", prompt="a red fox")
        job = await bot.settled((await bot.latest_job()).id)

        assert job.status == "create_failed"
        assert job.error == "The workspace has run out of credits."
        assert bot.progress(job).text.endswith(
            "could not start: The workspace has run out of credits."
        )
        assert len(bodies(bot.sim, "/gen/v2/imagine")) == 1


async def test_duplicate_presses_make_one_job_and_one_provider_call(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        await asyncio.gather(alice.press(grid, "U1"), alice.press(grid, "U1"))
        await alice.press(grid, "U1")

        upscales = [job for job in await bot.all_jobs() if job.type == "upscale"]
        assert len(upscales) == 1
        await bot.settled(upscales[0].id)
        assert len(bodies(bot.sim, "/gen/v2/upscale")) == 1
        assert bot.sim.state.creations["upscale"] == 1
        replies = bot.platform.ephemerals_for("alice")
        assert len(replies) == 2
        assert all(r.startswith("You already pressed this — ") for r in replies), replies


@pytest.mark.parametrize("open_channel", [False, True])
async def test_only_the_requester_may_press_unless_the_channel_is_open(
    tmp_path: Path, open_channel: bool
) -> None:
    channels = {"fake": frozenset({"c1"})} if open_channel else {}
    async with harness(tmp_path, open_channels=channels) as bot:
        alice, bob = bot.actor("alice"), bot.actor("bob")
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        _, upscale = await press(bot, alice, grid, "U1")
        await bob.press(grid, "U2")
        await bob.press(upscale, "Custom Zoom")

        if open_channel:
            job = await bot.latest_job()
            assert job.type == "upscale" and job.requester_id == "bob"
            await bot.settled(job.id)
            assert bot.platform.modals[-1][1].action == "outpaint_custom"
            await bob.press(grid, "U1")
            [again] = bot.platform.ephemerals_for("bob")
            assert again.startswith("Someone already pressed this — [here is the result]("), again
        else:
            assert (
                bot.platform.ephemerals_for("bob")
                == [
                    "Only the person who started this job can use its buttons here "
                    "(this channel is not open to everyone)."
                ]
                * 2
            )
            assert len(bodies(bot.sim, "/gen/v2/upscale")) == 1 and bot.platform.modals == []
            admin = bot.actor("carol", admin=True)
            job, _ = await press(bot, admin, grid, "U2")
            assert job.requester_id == "carol"


async def test_a_version_genbot_does_not_know_goes_to_the_provider(tmp_path: Path) -> None:
    # docs/provider.md#prompt-check: only malformed prompts are refused before sending; the
    # default dialect refuses --v 7 and the user sees the provider's words.
    async with harness(tmp_path) as bot:
        await bot.actor().command("imagine", prompt="a red fox --v 7 --ar 5:1")
        job = await bot.settled((await bot.latest_job()).id)
        assert job.status == "create_failed"
        assert job.error is not None and "--v 7" in job.error
        assert job.error.startswith("The service refused the request:")
    # The spec dialect takes it; the buttons follow the newest version genbot knows (6).
    async with harness(tmp_path / "spec", dialect="spec") as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox --v 7 --ar 5:1")
        _, upscale = await press(bot, alice, grid, "U1")
        labels = [*V6_UPSCALE_LABELS[:6], "Make Square", *V6_UPSCALE_LABELS[6:]]
        assert [b.label for b in upscale.buttons] == labels
        _, subtle = await press(bot, alice, upscale, "Upscale (Subtle)")
        assert bodies(bot.sim, "/gen/v2/upscale")[-1]["index"] == "subtle"
        assert bodies(bot.sim, "/gen/v2/imagine")[0]["prompt"] == "a red fox --v 7 --ar 5:1"
        assert subtle.message.images


async def test_a_task_shows_the_mode_asked_unless_its_account_is_set_to_relax(
    tmp_path: Path,
) -> None:
    # meta.process_mode is the account's setting ("mode of the bot that processes the task"),
    # not the job's mode (docs/provider.md#mode-fallback): the simulator's account is set to
    # fast, so a turbo job's record says fast; the title keeps the mode asked.
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        job, grid = await run_command(
            bot, alice, "imagine", prompt="a red fox", process_mode="turbo"
        )
        assert (await bot.settled(job.id)).result["mode"] == "fast"
        assert grid.text == "**Imagined** — a red fox (turbo)"
        up_job, upscale = await press(bot, alice, grid, "U1")
        assert up_job.parameters["process_mode"] == "turbo"
        assert upscale.text == "**Upscaled #1** — a red fox (turbo)"
    # Mode rule 3: with its fast hours used up the account is set to relax and runs every job
    # as relax: then "(relax)" is shown, and its derivatives are relax (spec §4: they inherit
    # the mode of the parent task), stored, estimated and admitted so.
    config = SimulatorConfig(time_scale=0.003, fast_hours=0)
    (tmp_path / "relax").mkdir()
    async with harness(tmp_path / "relax", sim_config=config) as bot:
        alice = bot.actor()
        job, grid = await run_command(
            bot, alice, "imagine", prompt="a red fox", process_mode="fast"
        )
        assert grid.text == "**Imagined** — a red fox (relax)"
        up_job, upscale = await press(bot, alice, grid, "U1")
        assert up_job.parameters["process_mode"] == "relax", "it inherits the mode shown"
        assert upscale.text == "**Upscaled #1** — a red fox (relax)"
        _, described = await run_command(
            bot, alice, "describe", url="https://files.example.com/cat.png", process_mode="turbo"
        )
        assert "Ran in" not in described.text


async def test_a_403_outside_chat_is_a_refusal_in_the_providers_words(tmp_path: Path) -> None:
    # docs/provider.md#forbidden: the key is right but the account may not create.
    config = SimulatorConfig(time_scale=0.003, api_key="other", suspended_api_key="sim-key")
    async with harness(tmp_path, sim_config=config) as bot:
        alice = bot.actor()
        await alice.command("imagine", prompt="a red fox")
        imagine = await bot.settled((await bot.latest_job()).id)
        await alice.command("diffusion.txt2img", prompt="a red fox")
        txt2img = await bot.settled((await bot.latest_job()).id)
        for job in (imagine, txt2img):
            assert job.status == "create_failed"
            assert job.error == (
                "The service does not allow this: this account is suspended: it may not create "
                "anything"
            )
        assert (await bot.store.ledger.usage_for_user("fake", "alice")).credits == 0


async def test_reroll_starts_a_new_job_at_each_press_once_the_last_one_ended(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        first, _ = await press(bot, alice, grid, "🔄")
        second, _ = await press(bot, alice, grid, "🔄")
        assert first.id != second.id and first.type == second.type == "reroll"
        assert len(bodies(bot.sim, "/gen/v2/reroll")) == 2
        assert bot.platform.ephemerals_for("alice") == []
        await asyncio.gather(alice.press(grid, "🔄"), alice.press(grid, "🔄"))
        assert len([job for job in await bot.all_jobs() if job.type == "reroll"]) == 3
        [double] = bot.platform.ephemerals_for("alice")
        assert double.startswith("You already pressed this — "), "a double click starts one"
