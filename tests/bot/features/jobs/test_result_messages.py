"""Result messages: the image is downloaded from the first of the record's links that works."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.bot.features.jobs.support import run_command
from tests.bot.harness import harness


async def test_a_result_whose_image_url_fails_is_downloaded_from_the_next_link(
    tmp_path: Path,
) -> None:
    # docs/provider.md#image-url-fields: image_url, else permanent_url, else host_url.
    async with harness(tmp_path) as bot:
        job, _ = await run_command(bot, bot.actor(), "imagine", prompt="a red fox")
        done = await bot.settled(job.id)
        _, permanent_url, host_url = done.result_urls
        assert "/permanent/" in permanent_url and "/host/" in host_url
        broken = f"{bot.sim.base_url}/images/{'0' * 32}.png"
        moved = dataclasses.replace(done, result_urls=[broken, permanent_url, host_url])
        message, size = await bot.jobs.delivery.results.result(moved, link_instead=False)
        [image] = message.images
        assert image.data == (await bot.jobs.media.fetch(permanent_url)).data
        assert size == (512, 512)
