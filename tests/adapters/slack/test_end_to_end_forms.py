"""Forms on Slack with the real core.

- A refused value keeps the form open (``response_action: errors``) with the sentence beside
  its field and every typed value kept; nothing starts; the corrected form then runs.
- Vary (Region): the submitted form comes back as an ephemeral message showing the image with
  the chosen area marked (a privately uploaded file in an ``image`` block), with ▶️ Run and ✏️
  Edit; Edit reopens the form, which gains the same preview above its fields; Run starts the
  job with the mask.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PIL import Image

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.slack.end_to_end import (
    JOB_TIME_SCALE,
    WAIT,
    bot_message_with_button,
    budgeted_fake,
    created,
    slack_genbot,
)
from tests.bot.features.jobs.support import mask_pixels
from tests.fakes.slack import FakeSlack

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with budgeted_fake() as slack:
        yield slack


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=JOB_TIME_SCALE)) as running:
        yield running


async def test_a_region_form_shows_a_private_preview_that_runs_or_edits(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        await fake.post_command(bot.url, fake.slash_command("/imagine", "a fox --ar 2:1"))
        grid = await fake.wait_for(bot_message_with_button(fake, "C1", "U1"), WAIT)
        upscale = fake.block_actions(grid, grid.button("U1")["action_id"])
        await fake.post_interactive(bot.url, upscale)
        upscaled = await fake.wait_for(bot_message_with_button(fake, "C1", "Vary (Region)"), WAIT)
        opening = fake.block_actions(upscaled, upscaled.button("Vary (Region)")["action_id"])
        await fake.post_interactive(bot.url, opening)
        (form,) = await fake.wait_for(lambda: fake.views, WAIT)

        values = {"area": "left half", "prompt": "a red hat"}
        await fake.post_interactive(bot.url, fake.view_submission(form, values))
        (preview,) = await fake.wait_for(lambda: fake.ephemerals, WAIT)

        assert created(sim, "/gen/v2/inpaint") == []
        assert (preview.user, preview.channel, preview.via) == ("U1", "C1", "chat.postEphemeral")
        assert "the marked area will be repainted with “a red hat”" in preview.text
        [file_id] = preview.image_files
        assert fake.files[file_id].channel is None, "uploaded privately, shared nowhere"
        with Image.open(io.BytesIO(dict(fake.uploads)[file_id])) as picture:
            left = picture.convert("RGB").getpixel((20, picture.height // 2))
            assert picture.size == (384, 192)
        assert isinstance(left, tuple) and left[2] > left[0]

        edit = fake.ephemeral_block_actions(preview, preview.button("✏️ Edit")["action_id"])
        await fake.post_interactive(bot.url, edit)
        again = await fake.wait_for(lambda: fake.views[1] if len(fake.views) > 1 else None, WAIT)
        assert again.callback_id.startswith("gb:vary_region:")
        await fake.wait_for(lambda: again.image_files or None, WAIT)
        assert again.input_ids == form.input_ids, "the fields keep their block ids"
        [in_form] = again.image_files
        with Image.open(io.BytesIO(dict(fake.uploads)[in_form])) as picture:
            left = picture.convert("RGB").getpixel((20, picture.height // 2))
        assert isinstance(left, tuple) and left[2] > left[0], "the form shows the marked area"

        run = fake.ephemeral_block_actions(preview, preview.button("▶️ Run")["action_id"])
        await fake.post_interactive(bot.url, run)
        [request] = await fake.wait_for(lambda: created(sim, "/gen/v2/inpaint"), WAIT)
        assert request.body["prompt"] == "a red hat"
        mask = mask_pixels(request.body["mask"])
        assert mask.getpixel((10, mask.height // 2)) == 255
        assert mask.getpixel((mask.width - 10, mask.height // 2)) == 0
        await fake.wait_for(
            lambda: bot_message_with_button(fake, "C1", "U1")() is not grid or None, WAIT
        )
    assert fake.ratelimited == []


async def test_a_refused_custom_zoom_stays_open_with_the_error_beside_the_factor(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        await fake.post_command(bot.url, fake.slash_command("/imagine", "a fox"))
        grid = await fake.wait_for(bot_message_with_button(fake, "C1", "U1"), WAIT)
        await fake.post_interactive(
            bot.url, fake.block_actions(grid, grid.button("U1")["action_id"])
        )
        upscaled = await fake.wait_for(bot_message_with_button(fake, "C1", "Custom Zoom"), WAIT)
        opening = fake.block_actions(upscaled, upscaled.button("Custom Zoom")["action_id"])
        await fake.post_interactive(bot.url, opening)
        (form,) = await fake.wait_for(lambda: fake.views, WAIT)

        typed = {"zoom_value": "3", "prompt": "a wider fox"}
        await fake.submit_view(bot.url, form, typed)
        assert not form.closed
        assert form.errors == {"zoom_value": "The zoom must be above 1 and at most 2 (got 3)."}
        assert fake.ephemerals == [] and len(fake.views) == 1

        await fake.submit_view(bot.url, form, {**typed, "zoom_value": "1.5"})
        assert form.closed
        await fake.wait_for(lambda: created(sim, "/gen/v2/outpaint") or None, WAIT)
        [outpaint] = sim.state.requests_to("/gen/v2/outpaint")
        assert outpaint.body["zoom_ratio"] == "1.5" and outpaint.body["prompt"] == "a wider fox"


async def test_a_refused_settings_value_keeps_the_form_open(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        await fake.post_command(bot.url, fake.slash_command("/genbot", "settings"))
        (form,) = await fake.wait_for(lambda: fake.views, WAIT)
        await fake.submit_view(bot.url, form, {"temperature": "9", "model": "llm-4"})
        assert not form.closed
        assert form.errors == {"temperature": "temperature must be at most 2 (got 9)."}
        assert fake.ephemerals == []
