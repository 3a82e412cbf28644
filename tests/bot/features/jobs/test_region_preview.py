"""Vary (Region) previews: the chosen areas drawn on the image, shown privately with ▶️ Run and
✏️ Edit before anything reaches the provider (where the platform can show a private message)."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from bot.features.jobs.forms import read_region
from bot.features.jobs.region_preview import PREVIEW_SIDE, marked_image
from bot.kernel import Event, ImageFile, OutMessage
from tests.bot.features.jobs.support import bodies, image_size, mask_pixels, png, press, run_command
from tests.bot.harness import ROOMY, harness
from tests.fakes.platform import FakePlatform, PostedMessage


class PreviewingPlatform(FakePlatform):
    """A fake platform that, like Discord and Slack, shows private messages with images."""

    def __init__(self) -> None:
        super().__init__(profile=ROOMY)
        self.private: list[tuple[Event, OutMessage]] = []

    async def send_private(self, origin: Event, message: OutMessage) -> None:
        self.private.append((origin, message))
        await self._notify()


def pixel(data: bytes, x: int, y: int) -> tuple[int, int, int]:
    with Image.open(io.BytesIO(data)) as image:
        value = image.convert("RGB").getpixel((x, y))
    assert isinstance(value, tuple)
    return value[0], value[1], value[2]


def test_the_preview_marks_exactly_where_the_mask_is() -> None:
    source = png(800, 400, "#808080")
    form = read_region({"region": "25,50,50,25"})

    preview = marked_image(source, form)

    assert image_size(preview) == (PREVIEW_SIDE, PREVIEW_SIDE // 2)
    inside, outside = pixel(preview, 192, 120), pixel(preview, 40, 40)
    assert inside[2] > inside[0] and sum(inside) > 3 * 0x80 * 0.9
    assert outside[0] == outside[1] == outside[2] < 0x80 * 0.5
    # x 25–75 %, y 50–75 % of 384×192: 96…288 across, 96…144 down; white edge on its border.
    assert pixel(preview, 96, 120) == (255, 255, 255)
    assert pixel(preview, 192, 144) == (255, 255, 255)
    assert pixel(preview, 192, 90) == outside
    assert pixel(preview, 300, 120) == outside
    assert pixel(preview, 192, 150) == outside


def test_a_preset_and_typed_areas_are_all_marked() -> None:
    preview = marked_image(png(100, 100, "#808080"), read_region({"area": "left half"}))
    left, right = pixel(preview, 20, 50), pixel(preview, 80, 50)
    assert left[2] > left[0] and right[0] == right[2] < 0x40 + 1


async def test_vary_region_is_previewed_privately_then_runs_or_reopens_the_form(
    tmp_path: Path,
) -> None:
    platform = PreviewingPlatform()
    async with harness(tmp_path, platform=platform) as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox --ar 2:1")
        up_job, upscale = await press(bot, alice, grid, "U1")
        await alice.press(upscale, "Vary (Region)")
        _, modal = platform.modals[-1]
        await alice.submit(modal, area="left half", prompt="a blue hat")

        assert bodies(bot.sim, "/gen/v2/inpaint") == []
        [(origin, preview)] = platform.private
        assert origin.user == alice.user
        assert "the marked area will be repainted with “a blue hat”" in preview.text
        [shown] = preview.images
        assert isinstance(shown, ImageFile) and shown.content_type == "image/png"
        source = upscale.message.images[0].data
        assert image_size(shown.data) == image_size(source)
        assert [b.label for b in preview.buttons[0]] == ["▶️ Run", "✏️ Edit"]

        as_message = PostedMessage(upscale.ref, preview, origin)
        await alice.press(as_message, "✏️ Edit")
        _, again = platform.modals[-1]
        assert again.action == "vary_region" and again.ref == up_job.id
        assert {f.id: f.default for f in again.fields} == {
            "area": "left half",
            "region": "",
            "prompt": "a blue hat",
        }

        before = len(await bot.all_jobs())
        await alice.press(as_message, "▶️ Run")
        job = await bot.latest_job()
        assert len(await bot.all_jobs()) == before + 1 and job.parent_job_id == up_job.id
        await bot.result(job.id)
        (sent,) = bodies(bot.sim, "/gen/v2/inpaint")
        assert sent["origin_task_id"] == up_job.provider_id and sent["prompt"] == "a blue hat"
        mask = mask_pixels(sent["mask"])
        assert mask.getpixel((10, 100)) == 255 and mask.getpixel((300, 100)) == 0

        await alice.press(as_message, "▶️ Run")
        assert len(await bot.all_jobs()) == before + 1
        assert "You already pressed this" in platform.ephemerals_for("alice")[-1]
