"""Describe and blend end to end: prompts with buttons, attachments and their re-hosting."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest

from bot.features.jobs.starter import is_upstream_cdn
from simulator.server import serve
from simulator.state import Dialect, SimulatorConfig
from storage import Job
from tests.bot.features.jobs.support import (
    GRID_LABELS,
    attachment,
    bodies,
    image_size,
    png,
    press,
    run_command,
)
from tests.bot.features.jobs.test_batches import PrivatePlatform, imagined, run_pressed, until
from tests.bot.harness import harness, running_genbot
from tests.fakes.platform import PostedMessage

MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)


@pytest.mark.parametrize("dialect", ["default", "spec", "variant"])
async def test_describe_posts_four_prompts_whose_buttons_imagine_them(
    tmp_path: Path, dialect: Dialect
) -> None:
    # spec and variant send no task_result.prompts: the prompts come from the message.
    async with harness(tmp_path, dialect=dialect) as bot:
        alice = bot.actor()
        url = "https://files.example.com/cat.png"
        job, described = await run_command(bot, alice, "describe", url=url)

        done = await bot.settled(job.id)
        prompts = done.result["prompts"]
        assert len(prompts) == 4
        assert [b.label for b in described.buttons] == [
            *("1", "2", "3", "4", "🔄"),
            *("Imagine all", "ℹ️"),
        ]
        for digit, prompt in zip(("1️⃣", "2️⃣", "3️⃣", "4️⃣"), prompts, strict=True):
            assert f"{digit} {prompt}" in described.text
        assert bodies(bot.sim, "/gen/v2/describe") == [{"image_url": url}]
        assert described.message.images == (), "an image that cannot be fetched is left out"

        await alice.press(described, "2")
        _, form = bot.platform.modals[-1]
        assert (form.action, form.fields[0].default) == ("describe_pick2", prompts[1])
        await alice.submit(form, prompt="")
        _, again = bot.platform.modals[-1]
        assert again.error_of("prompt") == "The prompt is empty; write what to imagine."
        await alice.submit(form, prompt=f"watercolor {prompts[1]}")
        pick = await bot.latest_job()
        assert pick.type == "imagine", (bot.platform.ephemerals, bot.platform.modals[-1])
        grid = await bot.result(pick.id)
        assert pick.type == "imagine" and pick.prompt == f"watercolor {prompts[1]}"
        assert bodies(bot.sim, "/gen/v2/imagine")[0]["prompt"] == pick.prompt
        assert [b.label for b in grid.buttons] == GRID_LABELS
        assert described.button("2").style == "primary"

        await bot.store.settings.set_scope_settings("user", "fake", "alice", remix=False)
        at_once, _ = await press(bot, alice, described, "3")
        assert at_once.prompt == prompts[2] and len(bot.platform.modals) == 2


async def test_a_picked_prompt_runs_from_its_form_as_the_provider_wrote_it(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        job, described = await run_command(
            bot, alice, "describe", url="https://files.example.com/cat.png"
        )
        await bot.settled(job.id)
        written = "a sign reading {OPEN, CLOSED}, {neon} glow, a \\ slash --ar 3:2 --v 6"
        await bot.store.jobs.change_job_result(
            job.id, lambda result: {**result, "prompts": [written, *result["prompts"][1:]]}
        )
        for edit in ("", " at night"):
            before = len(bodies(bot.sim, "/gen/v2/imagine"))
            await alice.press(described, "1")
            _, form = bot.platform.modals[-1]
            [field] = form.fields
            await alice.submit(form, prompt=field.default + edit)
            assert bot.platform.modals[-1][1] is form, "not refused: the form came back"
            picked = await bot.latest_job()
            await bot.result(picked.id)
            assert picked.type == "imagine" and picked.prompt == written + edit
            sent = bodies(bot.sim, "/gen/v2/imagine")[before:]
            assert [body["prompt"] for body in sent] == [written + edit], "one job, as written"


async def test_describe_shows_the_image_and_redescribes(tmp_path: Path) -> None:
    async with harness(tmp_path, sim_config=MANUAL) as bot:
        alice = bot.actor()

        async def finished(started: Job) -> PostedMessage:
            bot.sim.advance(120)
            return await bot.result(started.id)

        await alice.command("imagine", prompt="a lighthouse")
        await finished(await bot.latest_job())
        shown = (await bot.latest_job()).result_urls[0]
        await alice.command("describe", url=shown)
        job = await bot.latest_job()
        described = await finished(job)
        served = await bot.jobs.media.fetch(shown)
        assert [i.data for i in described.message.images] == [served.data]

        await alice.press(described, "🔄")
        again = await bot.latest_job()
        redescribed = await finished(again)
        assert again.type == "describe" and again.parameters["image_url"] == shown
        assert redescribed.message.images and redescribed.ref != described.ref


async def test_imagine_all_is_a_batch_whose_jobs_past_the_cap_queue_and_start_once(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    db = tmp_path / "genbot.db"
    async with serve(MANUAL) as sim:
        async with running_genbot(sim, db, platform=platform) as bot:
            alice = bot.actor()
            await alice.command("describe", url="https://files.example.com/cat.png")
            job = await bot.latest_job()
            sim.advance(120)
            described = await bot.result(job.id)
            prompts = (await bot.settled(job.id)).result["prompts"]

            await alice.press(described, "Imagine all")
            await alice.press(described, "Imagine all")
            first, second = platform.privates
            assert first.text.startswith("**4 jobs** of `/imagine`"), first.text
            listed = "\n".join(f"{n}. {p}" for n, p in enumerate(prompts, start=1))
            assert listed in first.text
            assert "lets 3 start now. The other 1 waits in the queue" in first.text
            assert [b.label for row in first.buttons for b in row] == ["Run 4 jobs", "Cancel"]
            assert imagined(sim) == [], "nothing starts before Run"

            await run_pressed(bot, platform, preview=first)
            await run_pressed(bot, platform, preview=second)
            assert imagined(sim) == sorted(prompts[:3])
            told = (
                "3 of 4 jobs started. 1 waits in the queue, starting when one of your jobs "
                "finishes (your cap of jobs at once)."
            )
            already = (
                "Imagine all was pressed already: its prompts have started, or wait in the queue "
                "for a free place among your jobs."
            )
            assert platform.ephemerals_for("alice") == [told, already]
            closed = platform.privates[-1]  # the fake changes the newest preview
            assert [b.disabled for row in closed.buttons for b in row] == [True, True]
            assert described.button("Imagine all").style == "primary"
            await alice.press(described, "Imagine all")
            assert len(platform.privates) == 2, "no third preview"
            assert platform.ephemerals_for("alice")[2] == already
        sim.advance(3600)
        async with running_genbot(sim, db, platform=platform) as bot:
            await until(lambda: asyncio.sleep(0, len(imagined(sim)) == 4))
            await asyncio.sleep(0.3)
            assert imagined(sim) == sorted(prompts), "each prompt started once, the 4th queued"
            jobs = [j for j in await bot.all_jobs() if j.parent_job_id == job.id]
            assert sorted(j.action or "" for j in jobs) == [
                f"describe_all:{n}" for n in (1, 2, 3, 4)
            ]


async def test_describe_of_an_attached_image(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        image = attachment("cat.png")
        job, _ = await run_command(bot, alice, "describe", image=image)
        assert bodies(bot.sim, "/gen/v2/describe") == [{"image_url": image.url}]
        assert (await bot.settled(job.id)).status == "posted"


async def test_describe_refuses_a_cdn_link_without_a_media_host(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        cdn = attachment("cat.png", "https://cdn.discordapp.com/attachments/1/2/cat.png", png())
        await alice.command("describe", image=cdn)
        (text,) = bot.platform.ephemerals_for("alice")
        assert "cannot open files shared on" in text and "[webhook] public_url" in text
        assert bodies(bot.sim, "/gen/v2/describe") == [] and await bot.all_jobs() == []


SLACK_FILE = "https://files.slack.com/files-pri/T1-F1/cat.png"


async def test_private_files_are_refused_without_a_media_host(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        private = replace(attachment("cat.png", SLACK_FILE, png()), private=True)
        await alice.command("describe", image=private)
        await alice.command("diffusion.img2img", prompt="a cat", init_image=private)
        first, second = bot.platform.ephemerals_for("alice")
        assert "cannot open files shared on" in first and "https link" in first
        assert first == second
        assert bot.sim.state.requests_to("/gen/v2/describe") == []
        assert bot.sim.state.requests_to("/diff/img2img") == []


async def test_private_files_are_rehosted_never_passed_on(tmp_path: Path) -> None:
    async with harness(tmp_path, webhooks=True) as bot:
        alice = bot.actor()
        data = png(40, 30)
        private = replace(attachment("cat.png", SLACK_FILE, data), private=True)
        await run_command(bot, alice, "describe", image=private)
        await alice.command("diffusion.img2img", prompt="a cat", init_image=private)
        sent = [r.body for r in bot.sim.state.requests if isinstance(r.body, dict)]
        (described,) = bodies(bot.sim, "/gen/v2/describe")
        (diffused,) = bodies(bot.sim, "/diff/img2img")
        public = bot.settings.webhook.public_url + "/media/"
        assert described["image_url"].startswith(public)
        assert diffused["init_image"].startswith(public)
        assert all("files.slack.com" not in json.dumps(body) for body in sent)


async def test_describe_rehosts_a_cdn_attachment_on_the_receiver(tmp_path: Path) -> None:
    async with harness(tmp_path, webhooks=True) as bot:
        alice = bot.actor()
        data = png(40, 30)
        cdn = attachment("cat.png", "https://cdn.discordapp.com/attachments/1/2/cat.png", data)
        job, _ = await run_command(bot, alice, "describe", image=cdn)

        (sent,) = bodies(bot.sim, "/gen/v2/describe")
        assert sent["image_url"].startswith(bot.settings.webhook.public_url + "/media/")
        assert (await bot.jobs.media.fetch(sent["image_url"])).data == data
        assert (await bot.settled(job.id)).status == "posted"


async def test_blend_sends_every_image_and_the_dimension(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        images = {f"image{i}": attachment(f"p{i}.png") for i in (1, 2, 3)}
        _, blended = await run_command(bot, alice, "blend", dimension="portrait", **images)
        (sent,) = bodies(bot.sim, "/gen/v2/blend")
        assert sent == {"image_urls": [a.url for a in images.values()], "dimension": "portrait"}
        assert image_size(blended.message.images[0].data) == (342, 512)
        assert blended.text.startswith("**Blended** — a blend of 3 images")
        assert [b.label for b in blended.buttons] == GRID_LABELS
        _, upscale = await press(bot, alice, blended, "U2")
        assert upscale.text.startswith("**Upscaled #2** — a blend of 3 images"), upscale.text


async def test_blend_without_a_dimension_sends_square(tmp_path: Path) -> None:
    # The spec dialect refuses a blend that leaves dimension to a default it never documents.
    async with harness(tmp_path, dialect="spec") as bot:
        alice = bot.actor()
        images = {f"image{i}": attachment(f"p{i}.png") for i in (1, 2)}
        job, _ = await run_command(bot, alice, "blend", **images)
        (sent,) = bodies(bot.sim, "/gen/v2/blend")
        assert sent["dimension"] == "square"
        assert (await bot.settled(job.id)).status == "posted"


def test_an_upstream_cdn_link_is_one_on_the_configured_hosts() -> None:
    cdn = "https://files.example-cdn.com/a.png"
    assert is_upstream_cdn(cdn, ["example-cdn.com"])
    assert not is_upstream_cdn(cdn, ["cdn.discordapp.com"])
    assert not is_upstream_cdn("ftp://example-cdn.com/a.png", ["example-cdn.com"])
