"""Vary (Region) on Discord: a modal cannot show an image, so the submitted form comes back as a
private message with the image and the chosen area marked, ▶️ Run and ✏️ Edit — through the
real discord.py, the fake Discord, the real core and the simulator."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PIL import Image

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import QUICK_BUCKET, creations, newest, with_image
from tests.adapters.discord.test_end_to_end_images import genbot_in, imagine, result_with
from tests.bot.features.jobs.support import image_size, mask_pixels

pytestmark = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=0.003, seed=11)) as running:
        yield running


async def test_a_region_form_shows_a_private_preview_that_runs_or_edits(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    async with genbot_in(harness, sim, tmp_path) as genbot:
        grid = await imagine(fake, "a green frog --ar 2:1")
        await fake.press(alice, grid, "U1")
        upscale = await result_with(fake, general, "Vary (Region)")
        upscaled = await genbot.posted("upscale")

        opened = await fake.press(alice, upscale, "Vary (Region)")
        assert await fake.answered(opened) == 9
        submitted = await fake.submit_modal(
            opened, {"area": "left half", "region": "", "prompt": "a red hat"}
        )
        assert await fake.answered(submitted) == 5
        preview = await fake.wait_for(
            lambda: next(iter(fake.ephemerals_for(alice)), None), 10.0, "the preview"
        )
        assert creations(sim, "inpaint") == []
        assert "the marked area will be repainted with “a red hat”" in preview.content
        [shown] = preview.attachments
        assert shown.content_type == "image/png"
        assert image_size(shown.data) == image_size(upscale.attachments[0].data)
        with Image.open(io.BytesIO(shown.data)) as picture:
            left = picture.convert("RGB").getpixel((20, picture.height // 2))
        assert isinstance(left, tuple) and left[2] > left[0]
        assert [b.get("label") for b in preview.buttons] == ["▶️ Run", "✏️ Edit"]
        assert not [m for m in fake.bot_messages(general.id) if m.id > upscale.id]

        edit = await fake.press(alice, preview, "✏️ Edit")
        assert await fake.answered(edit) == 9
        assert edit.modal is not None and edit.modal["custom_id"].startswith("gb:vary_region:")

        run = await fake.press(alice, preview, "▶️ Run")
        await fake.answered(run)
        varied = await fake.wait_for(
            lambda: newest(
                fake.bot_messages(general.id), lambda m: with_image(m) and m.id > upscale.id
            ),
            10.0,
            "the varied image",
        )
        [request] = creations(sim, "inpaint")
        assert request.body["origin_task_id"] == upscaled.provider_id
        assert request.body["prompt"] == "a red hat"
        mask = mask_pixels(request.body["mask"])
        assert mask.getpixel((10, mask.height // 2)) == 255
        assert mask.getpixel((mask.width - 10, mask.height // 2)) == 0
        assert varied.attachments
    assert fake.rate_limit_hits == 0
