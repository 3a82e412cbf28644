"""The diffusion engine (family C) end to end through the fake platform and the simulator."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web

from bot.features.jobs.diffusion import init_size
from bot.features.jobs.diffusion_models import DiffusionModels
from bot.features.jobs.wording import ACCEPTED_NOTE
from bot.kernel import Command, User
from simulator.server import serve
from simulator.state import Dialect, SimulatorConfig
from tests.bot.features.jobs.support import (
    attachment,
    bare_engines,
    bodies,
    image_size,
    png,
    press,
    run_command,
)
from tests.bot.harness import PLACE, harness

DIFFUSION_LABELS = ["🔄", "Upscale", "Use as init", "Use as reference", "ℹ️"]
ALICE = Command(user=User("alice"), place=PLACE, name="diffusion.txt2img")


async def test_small_txt2img_succeeds_at_once_and_is_rehosted(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        job, result = await run_command(
            bot, alice, "diffusion.txt2img", text="a red fox --width 512 --steps 21 --seed 7"
        )

        (sent,) = bodies(bot.sim, "/diff/txt2img")
        assert sent == {
            "prompt": "a red fox",
            "width": "512",
            "num_inference_steps": "21",
            "seed": 7,
        }
        assert bot.sim.state.requests_to("/diff/fetch") == []
        assert [b.label for b in result.buttons] == DIFFUSION_LABELS
        assert image_size(result.message.images[0].data) == (256, 256)
        done = await bot.settled(job.id)
        assert done.provider_id == "100001" and done.result["meta"]["seed"] == 7
        assert (await bot.store.ledger.usage_for_user("fake", "alice")).credits == 2


async def test_large_txt2img_is_fetched_after_its_eta(tmp_path: Path) -> None:
    async with harness(tmp_path, time_scale=0.01) as bot:
        alice = bot.actor()
        await alice.command("diffusion.txt2img", text="a red fox --width 1024 --height 768")
        job = await bot.latest_job()
        assert job.status == "processing" and job.next_poll_at is not None
        result = await bot.result(job.id)

        fetches = bodies(bot.sim, "/diff/fetch")
        assert fetches and all(body == {"id": 100001} for body in fetches)
        assert image_size(result.message.images[0].data) == (256, 192)


async def test_img2img_and_upscale_use_the_attachment_urls(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        init = attachment("start.png")
        _, first = await run_command(
            bot, alice, "diffusion.img2img", prompt="autumn", init_image=init, strength=0.6
        )
        _, upscaled = await run_command(bot, alice, "diffusion.upscale", image=init, scale=3)

        (sent,) = bodies(bot.sim, "/diff/img2img")
        assert sent == {"prompt": "autumn", "init_image": init.url, "strength": 0.6, "seed": None}
        assert bodies(bot.sim, "/diff/upscale") == [{"url": init.url, "scale": 3}]
        assert [b.label for b in first.buttons] == DIFFUSION_LABELS
        assert [b.label for b in upscaled.buttons] == [
            "🔄",
            "Use as init",
            "Use as reference",
            "ℹ️",
        ]
        assert upscaled.text.startswith("**Upscaled** — start.png"), "named by its file"
        _, again = await press(bot, alice, upscaled, "🔄")
        assert again.text.startswith("**Rerolled** — start.png")


async def test_controlnet_is_processing_then_posted(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        init, control = attachment("init.png"), attachment("edges.png")
        job, result = await run_command(
            bot,
            alice,
            "diffusion.controlnet",
            prompt="a fox",
            model_id="sd-1.5",
            controlnet_model="canny",
            init_image=init,
            control_image=control,
        )
        (sent,) = bodies(bot.sim, "/diff/controlnet")
        assert sent == {
            "prompt": "a fox",
            "model_id": "sd-1.5",
            "controlnet_model": "canny",
            "init_image": init.url,
            "control_image": control.url,
            "seed": None,
        }
        assert bodies(bot.sim, "/diff/fetch")
        assert result.message.images and (await bot.settled(job.id)).status == "posted"


async def test_controlnet_without_a_model_runs_with_the_providers_default_once_known(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        options = {"prompt": "a fox", "controlnet_model": "canny"}
        await alice.command("diffusion.controlnet", init_image=attachment("init.png"), **options)
        [refusal] = bot.platform.ephemerals_for("alice")
        assert refusal.startswith("`/diffusion controlnet` needs a checkpoint model, and genbot")
        assert "--model <model id>" in refusal and "[api] diffusion_models" in refusal
        assert bodies(bot.sim, "/diff/controlnet") == [] and await bot.all_jobs() == []

        await run_command(bot, alice, "diffusion.txt2img", prompt="a red fox")
        assert bot.jobs.diffusion.models.known() == ("sim-diffusion-1",), "as it answered"
        job, _ = await run_command(
            bot, alice, "diffusion.controlnet", init_image=attachment("init.png"), **options
        )
        (sent,) = bodies(bot.sim, "/diff/controlnet")
        assert sent["model_id"] == "sim-diffusion-1"
        assert (await bot.settled(job.id)).status == "posted"


def test_configured_models_come_first_and_the_first_is_the_default() -> None:
    models = DiffusionModels(["sd15", " ", "sdxl", "sd15"])
    assert models.known() == ("sd15", "sdxl") and models.default() == "sd15"
    assert DiffusionModels().known() == () and DiffusionModels().default() is None


@pytest.mark.parametrize("dialect", ["default", "spec"])
async def test_diffusion_buttons_reroll_upscale_and_use_as_init(
    tmp_path: Path, dialect: Dialect
) -> None:
    # The spec dialect gives an absent seed 0: 🔄 asks for a random one with null
    # (docs/provider.md#diffusion-seed).
    async with harness(tmp_path, dialect=dialect) as bot:
        alice = bot.actor()
        parent, result = await run_command(
            bot, alice, "diffusion.txt2img", text="a red fox --seed 7 --guidance 9"
        )
        output = (await bot.settled(parent.id)).result_urls[0]

        rerun, _ = await press(bot, alice, result, "🔄")
        upscale, _ = await press(bot, alice, result, "Upscale")
        await alice.press(result, "Use as init")
        _, modal = bot.platform.modals[-1]
        assert modal.action == "diff_init" and modal.ref == parent.id
        await alice.submit(modal, prompt="the fox in winter", strength="0.4")
        init_job = await bot.latest_job()
        await bot.result(init_job.id)

        first, again = bodies(bot.sim, "/diff/txt2img")
        assert again == {"prompt": "a red fox", "guidance_scale": 9.0, "seed": None}
        assert first == {**again, "seed": 7}
        rerun_done = await bot.settled(rerun.id)
        assert rerun_done.result["meta"]["seed"] not in (7, 0)
        assert bodies(bot.sim, "/diff/upscale") == [{"url": output}]
        # txt2img was asked for no size: img2img is asked for its image's.
        assert bodies(bot.sim, "/diff/img2img") == [
            {
                "prompt": "the fox in winter",
                "width": "512",
                "height": "512",
                "init_image": output,
                "strength": 0.4,
                "seed": None,
            }
        ]
        assert upscale.parent_job_id == parent.id and init_job.type == "img2img"


async def test_upscale_and_use_as_init_refuse_an_image_older_than_the_providers_7_days(
    tmp_path: Path,
) -> None:
    # "Generated images are kept for 7 days after processing": genbot keeps no copy to send.
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        parent, result = await run_command(bot, alice, "diffusion.txt2img", prompt="a red fox")
        await bot.settled(parent.id)
        await alice.press(result, "Use as init")
        _, modal = bot.platform.modals[-1]
        await bot.store.jobs.update_job(parent.id, finished_at=bot.store.clock() - 7 * 86400)
        await alice.press(result, "Upscale")
        await alice.submit(modal, prompt="the fox in winter", strength="0.4")
        await alice.press(result, "Use as init")
        refusal = (
            "This image is more than 7 days old: the image service keeps its images only 7 days "
            "and genbot keeps no copy it could send instead. Make a new image first."
        )
        assert bot.platform.ephemerals_for("alice") == [refusal] * 3
        assert len(bot.platform.modals) == 1
        assert bodies(bot.sim, "/diff/upscale") == bodies(bot.sim, "/diff/img2img") == []


async def test_use_as_reference_and_reroll_refuse_an_image_older_than_the_providers_7_days(
    tmp_path: Path,
) -> None:
    # 🔄 of an Upscale or img2img sends its source image's URL again, however recent the job.
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        parent, result = await run_command(bot, alice, "diffusion.txt2img", prompt="a red fox")
        await bot.settled(parent.id)
        _, upscaled = await press(bot, alice, result, "Upscale")
        await alice.press(result, "Use as init")
        _, init_form = bot.platform.modals[-1]
        await alice.submit(init_form, prompt="the fox in winter", strength="0.4")
        reworked = await bot.result((await bot.latest_job()).id)
        _, rerolled = await press(bot, alice, reworked, "🔄")
        await alice.press(result, "Use as reference")
        _, reference_form = bot.platform.modals[-1]
        assert bot.platform.ephemerals_for("alice") == []
        # A week passes for the first image, not for the jobs made from it.
        week = 7 * 86400
        await bot.store.jobs.update_job(parent.id, finished_at=bot.store.clock() - week)
        jobs = await bot.all_jobs()
        for job in jobs:
            if (source := job.parameters.get("source_processed_at")) is not None:
                aged = {**job.parameters, "source_processed_at": source - week}
                await bot.store.jobs.update_job(job.id, parameters=aged)

        await alice.press(result, "Use as reference")
        await alice.submit(reference_form, prompt="a fox in the snow")
        for message in (upscaled, reworked, rerolled):
            await alice.press(message, "🔄")
        refusal = (
            "This image is more than 7 days old: the image service keeps its images only 7 days "
            "and genbot keeps no copy it could send instead. Make a new image first."
        )
        assert bot.platform.ephemerals_for("alice") == [refusal] * 5
        assert len(bot.platform.modals) == 2 and len(await bot.all_jobs()) == len(jobs)
        assert bodies(bot.sim, "/gen/v2/imagine") == []
        assert len(bodies(bot.sim, "/diff/upscale")) == 1
        assert len(bodies(bot.sim, "/diff/img2img")) == 2


async def test_use_as_init_form_comes_back_with_the_values_and_the_error(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        _, result = await run_command(bot, alice, "diffusion.txt2img", prompt="a red fox")
        await alice.press(result, "Use as init")
        _, modal = bot.platform.modals[-1]
        assert modal.fields[0].default == "a red fox", "pre-filled with the image's prompt"
        await alice.submit(modal, prompt="winter", strength="2")
        await alice.submit(modal, prompt="", strength="0.5")
        again = [opened for _, opened in bot.platform.modals[1:]]
        assert [m.refusal for m in again] == [
            "strength must be at most 1 (got 2).",
            "Use as init needs a prompt describing the new image.",
        ]
        assert [[f.default for f in m.fields] for m in again] == [["winter", "2"], ["", "0.5"]]
        assert bot.platform.ephemerals_for("alice") == []
        assert bodies(bot.sim, "/diff/img2img") == []


@asynccontextmanager
async def provider_without_ids(ready: bool) -> AsyncIterator[str]:
    """A diffusion provider (real HTTP on 127.0.0.1) whose answers carry no id: with its
    images when ``ready``, else a bare ``processing``."""

    async def create(request: web.Request) -> web.Response:
        if not ready:
            return web.json_response({"status": "processing", "eta": 5})
        image = f"http://{request.host}/image.png"
        return web.json_response({"status": "success", "output": [image], "meta": {"seed": 3}})

    async def image(_: web.Request) -> web.Response:
        return web.Response(body=png(64, 48), content_type="image/png")

    app = web.Application()
    app.router.add_post("/diff/txt2img", create)
    app.router.add_get("/image.png", image)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_an_answer_without_an_id_still_delivers_its_images(tmp_path: Path) -> None:
    async with (
        serve(SimulatorConfig()) as sim,
        provider_without_ids(ready=True) as provider,
        bare_engines(sim, tmp_path, api_url=provider) as bare,
    ):
        job = await bare.engines.diffusion.run(ALICE, "txt2img", {"prompt": "a fox"})
        done = await bare.engines.watch.wait(job.id, {"posted", "failed_posted"}, 10)

        assert done.status == "posted" and done.provider_id is None
        result = bare.platform.messages[done.result_message_id or ""]
        assert image_size(result.message.images[0].data) == (64, 48)
        assert (await bare.store.ledger.usage_for_user("fake", "alice")).credits == 2


async def test_an_accepted_job_without_an_id_or_images_is_reported_as_charged(
    tmp_path: Path,
) -> None:
    async with (
        serve(SimulatorConfig()) as sim,
        provider_without_ids(ready=False) as provider,
        bare_engines(sim, tmp_path, api_url=provider) as bare,
    ):
        job = await bare.engines.diffusion.run(ALICE, "txt2img", {"prompt": "a fox"})
        done = await bare.engines.watch.wait(job.id, {"failed_posted", "create_failed"}, 10)

        assert done.status == "failed_posted"
        report = bare.platform.messages[done.result_message_id or ""].text
        assert "sent neither its images nor an id" in report and ACCEPTED_NOTE in report
        assert (await bare.store.ledger.usage_for_user("fake", "alice")).credits == 2


async def test_diffusion_is_charged_at_configured_prices_as_estimates(
    tmp_path: Path,
) -> None:
    # The variant dialect charges other prices than the default (docs/provider.md#diffusion-prices).
    prices = {"txt2img": 3, "img2img": 4, "upscale": 2, "controlnet": 5}
    async with harness(tmp_path, dialect="variant", limits={"diffusion_credits": prices}) as bot:
        alice = bot.actor()
        _, result = await run_command(bot, alice, "diffusion.txt2img", text="a red fox")
        await press(bot, alice, result, "Upscale")
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        await bot.settled((await bot.latest_job()).id)
        totals = await bot.store.ledger.usage_for_user("fake", "alice")
        assert totals.estimated_credits == 3 + 2
        assert totals.credits == 3 + 2 + 4 == bot.sim.state.accounts["sim-key"].charged
        assert grid.message.images


@pytest.mark.parametrize(
    ("shape", "size"),
    [
        ((16, 9), (680, 384)),
        ((1456, 816), (680, 384)),
        ((9, 16), (384, 680)),
        ((1, 1), (512, 512)),
        ((4, 1), (1024, 256)),
        ((1, 8), (128, 1024)),
        ((4000, 1), (1024, 8)),
    ],
)
def test_use_as_init_keeps_the_shape_within_the_providers_sizes(
    shape: tuple[int, int], size: tuple[int, int]
) -> None:
    assert init_size(*shape) == size
    assert all(side % 8 == 0 and 8 <= side <= 1024 for side in size)
