"""/imagine with reference images: each image sent with the command hosted in the shared
storage and written into the prompt in the provider's syntax, fetched by the provider (from any
process), and bad references refused before any provider call."""

from __future__ import annotations

from pathlib import Path

from bot.features.jobs.params import ImageParams
from bot.kernel import Attachment
from simulator.server import serve
from simulator.state import SimulatorConfig
from tests.bot.features.jobs.support import attachment, bodies, png
from tests.bot.harness import Genbot, harness, running_genbot
from tests.postgres import PostgresCluster


def media_url(bot: Genbot) -> str:
    return bot.settings.webhook.public_url + "/media/"


async def fetches(bot: Genbot, urls: list[str]) -> list[int]:
    assert bot.jobs.media_host is not None
    names = tuple(bot.jobs.media_host.name_of(url) or "" for url in urls)
    counted = await bot.store.media.fetches(names)
    return [counted.get(name, -1) for name in names]


async def test_an_image_prompt_and_a_style_reference_reach_the_provider_as_urls(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, webhooks=True) as bot:
        alice = bot.actor()
        image, style = png(40, 30, "blue"), png(30, 40, "green")
        await alice.command(
            "imagine",
            prompt="a fox --sw 300",
            image1=attachment("fox.png", data=image),
            style1=attachment("style.png", data=style),
        )
        job = await bot.latest_job()
        posted = await bot.result(job.id)

        (sent,) = bodies(bot.sim, "/gen/v2/imagine")
        words = sent["prompt"].split()
        assert words[1:3] == ["a", "fox"] and words[3] == "--sref" and words[5:] == ["--sw", "300"]
        hosted = [words[0], words[4]]
        assert all(url.startswith(media_url(bot)) for url in hosted)
        assert [(await bot.jobs.media.fetch(url)).data for url in hosted] == [image, style]
        assert await fetches(bot, hosted) == [2, 2], "the provider's fetch, then this test's"
        assert job.prompt == sent["prompt"]
        assert ImageParams.of(job).references == tuple(hosted)
        assert "ignored" not in posted.text


async def test_a_provider_that_ignores_references_still_posts_and_says_so(tmp_path: Path) -> None:
    async with harness(tmp_path, webhooks=True, dialect="spec") as bot:
        alice = bot.actor()
        await alice.command(
            "imagine",
            prompt="a fox",
            image1=attachment("fox.png", data=png()),
            character1=attachment("me.png", data=png(20, 20)),
        )
        job = await bot.latest_job()
        posted = await bot.result(job.id)
        assert posted.message.images, "the result is posted"
        assert "never fetched 2 of your 2 reference images: it may have ignored them" in (
            posted.text
        )


async def test_bad_references_are_refused_before_any_provider_call(tmp_path: Path) -> None:
    async with harness(tmp_path, webhooks=True) as bot:
        alice = bot.actor()
        image = attachment("fox.png", data=png())
        await alice.command("imagine", prompt="a fox --sw 5000 --sref 12", image1=image)
        await alice.command(
            "imagine",
            prompt="a fox",
            image1=image,
            image2=image,
            image3=image,
            style1=image,
            style2=image,
            character1=image,
        )
        await alice.command(
            "imagine",
            prompt="a fox",
            style1=Attachment("notes.pdf", "", content_type="application/pdf", data=b"%PDF-1"),
        )
        await alice.command("imagine", prompt="a fox", image1=attachment("fake.png", data=b"no"))
        await alice.command("imagine", prompt="a fox --cw 50 https://a.example/x.png")
        weight, many, pdf, fake, unweighed = bot.platform.ephemerals_for("alice")
        assert weight == "--sw must be from 0 to 1000 (got 5000)."
        assert many.startswith("A prompt takes at most 5 reference images") and "has 6" in many
        assert pdf.startswith("notes.pdf is not an image (application/pdf)")
        assert fake.startswith("fake.png: the file is not an image genbot can read")
        assert unweighed == "--cw weighs character references (--cref), and this prompt has none."
        assert bodies(bot.sim, "/gen/v2/imagine") == [] and await bot.all_jobs() == []


async def test_without_a_public_url_an_attached_reference_is_refused(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        await alice.command("imagine", prompt="a fox", style1=attachment("s.png", data=png()))
        (text,) = bot.platform.ephemerals_for("alice")
        assert "[webhook] public_url" in text and "https link" in text
        assert bodies(bot.sim, "/gen/v2/imagine") == []


async def test_a_reference_received_by_one_process_is_served_by_another(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    """Two genbot processes on one PostgreSQL database; the upload reaches the first, and the
    provider's fetches of its public address reach the second (a load balancer in front of
    both: here the first's public address is the second's receiver)."""
    url = postgres.create_schema()
    config = SimulatorConfig(time_scale=0.003, insecure_webhooks=True)
    async with (
        serve(config) as sim,
        running_genbot(sim, tmp_path / "a.db", storage_url=url, webhooks=True) as first,
        running_genbot(sim, tmp_path / "b.db", storage_url=url, webhooks=True) as second,
    ):
        assert first.jobs.media_host is not None
        first.jobs.media_host.base_url = second.settings.webhook.public_url
        await first.actor().command(
            "imagine",
            prompt="a fox",
            image1=attachment("fox.png", data=png(40, 30)),
            style1=attachment("style.png", data=png(30, 40)),
        )
        job = await first.latest_job()
        posted = await first.result(job.id, timeout=30)
        words = job.prompt.split()
        hosted = [words[0], words[4]]
        assert words[3] == "--sref" and all(u.startswith(media_url(second)) for u in hosted)
        assert await fetches(second, hosted) == [1, 1]
        assert "ignored" not in posted.text


async def test_use_as_reference_imagines_a_new_prompt_with_an_upscale_or_diffusion_image(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, webhooks=True) as bot:
        alice = bot.actor()
        await alice.command("imagine", prompt="a lighthouse")
        grid = await bot.result((await bot.latest_job()).id)
        await alice.press(grid, "U1")
        upscale_job = await bot.latest_job()
        upscale = await bot.result(upscale_job.id)

        await alice.press(upscale, "Use as reference")
        _, form = bot.platform.modals[-1]
        assert form.title == "Use as reference" and [f.id for f in form.fields] == [
            "prompt",
            "role",
        ]
        await alice.submit(form, prompt="a cat --sw 2000", role="style")
        _, again = bot.platform.modals[-1]
        assert again.error_of("prompt") == "--sw must be from 0 to 1000 (got 2000)."
        await alice.submit(form, prompt="a cat --sw 200", role="style")
        job = await bot.latest_job()
        posted = await bot.result(job.id)
        words = job.prompt.split()
        assert words[:3] == ["a", "cat", "--sref"] and words[4:] == ["--sw", "200"]
        assert words[3].startswith(media_url(bot)) and job.parent_job_id is None
        reference = await bot.jobs.media.fetch(words[3])
        [upscaled] = (await bot.settled(upscale_job.id)).result_urls[:1]
        assert reference.data == (await bot.jobs.media.fetch(upscaled)).data
        assert await fetches(bot, [words[3]]) == [2] and "ignored" not in posted.text
        assert "Use as reference" not in {b.label for b in grid.buttons}

        await alice.command("diffusion.txt2img", prompt="a fox")
        diffused = await bot.result((await bot.latest_job()).id)
        await alice.press(diffused, "Use as reference")
        _, form = bot.platform.modals[-1]
        await alice.submit(form, prompt="a fox in the snow")
        from_diffusion = await bot.latest_job()
        assert from_diffusion.type == "imagine"
        assert from_diffusion.prompt.split()[1:] == ["a", "fox", "in", "the", "snow"]
        assert (await bot.settled(from_diffusion.id)).status == "posted"
