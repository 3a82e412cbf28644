"""The playground in real headless Chromium, on the real core and the provider simulator:
imagine a grid, ask its info from the ⋯ menu, press U1, see the upscale's follow-ups, chat and
see the streamed reply complete; one message per job, marked buttons and the region editor;
describe and the narrow layout.

The browser is the shared ``chromium_browser`` (see :mod:`tests.adapters.web.browser`).
"""

from __future__ import annotations

import asyncio
import base64
import io
import re
from pathlib import Path

import pytest
from PIL import Image
from playwright.async_api import Browser, FilePayload, expect

from bot.kernel import LimitsSettings
from tests.adapters.web.browser import WAIT_MS, drag, send, user
from tests.genbot.stack import real_stack

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_imagine_upscale_and_chat_in_a_real_browser(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    answer = "The lighthouse keeper waves from the gallery deck."
    async with real_stack(tmp_path) as stack, user(chromium_browser) as tab:
        page = tab.page
        await tab.open(stack.url + "/")

        await send(page, "/imagine a lighthouse")
        grid = page.locator("article.message.kind-bot").filter(
            has=page.locator('.btn[data-custom-id^="gb:upscale1:"]')
        )
        await expect(grid).to_have_count(1, timeout=WAIT_MS)
        await expect(grid.locator("img")).to_have_count(1, timeout=WAIT_MS)
        await expect(grid.locator(".btn")).to_have_text(
            ["U1", "U2", "U3", "U4", "🔄", "V1", "V2", "V3", "V4", "🌱 Seed", "⋯"]
        )
        menu = grid.locator(".message-menu")
        await expect(menu).to_be_hidden()
        await grid.locator(".menu-toggle").click()
        await expect(menu.locator(".menu-item")).to_have_text(["ℹ️ Image info"])
        await menu.locator(".menu-item", has_text="Image info").click()
        await expect(menu).to_be_hidden()
        info = page.locator("article.message.kind-ephemeral", has_text="ℹ️ Imagined")
        await expect(info).to_contain_text("a lighthouse")
        await expect(info).to_contain_text("Only you can see this")
        async with asyncio.timeout(WAIT_MS / 1000):
            assert await grid.locator("img").evaluate("(img) => img.decode().then(() => true)")

        await grid.locator(".btn", has_text="U1").click()
        upscale = page.locator("article.message.kind-bot").filter(
            has=page.locator('.btn[data-custom-id^="gb:high_variation:"]')
        )
        await expect(upscale).to_have_count(1, timeout=WAIT_MS)
        await expect(upscale.locator("img")).to_have_count(1, timeout=WAIT_MS)
        for label in ("Vary (Strong)", "Vary (Subtle)", "Zoom Out 2x", "Custom Zoom", "⬅️"):
            await expect(upscale.locator(".btn", has_text=label)).to_be_visible(timeout=WAIT_MS)
        assert len(stack.sim.state.requests_to("/gen/v2/upscale")) == 1

        box = page.locator("#composer-slot textarea")
        await box.fill(f"@genbot echo: {answer}")
        await page.locator("#composer-slot .send-button").click()
        thread = page.locator("#thread-messages")
        reply = thread.locator("article.message.kind-bot .text", has_text=answer)
        await expect(reply).to_have_text(answer, timeout=WAIT_MS)
        await expect(thread.locator("article.message.kind-bot", has_text="▌")).to_have_count(
            0, timeout=WAIT_MS
        )
        await expect(page.locator("#messages .thread-link")).to_have_count(1)
        assert tab.errors == []


TICKING = LimitsSettings(poll_interval_min=0.05, poll_interval_max=0.2, progress_tick_seconds=0.5)


async def test_one_message_per_job_marked_buttons_and_the_region_editor(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with (
        real_stack(tmp_path, time_scale=0.05, limits=TICKING) as stack,
        user(chromium_browser) as tab,
    ):
        page = tab.page
        await tab.open(stack.url + "/")

        await send(page, "/imagine a lighthouse")
        bot_messages = page.locator("article.message.kind-bot")
        await expect(bot_messages).to_have_count(1)
        job = bot_messages.first
        await expect(job).to_contain_text("Imagine")
        await expect(job.locator(".btn", has_text="❌ Cancel")).to_be_visible()
        await expect(job).to_contain_text(
            re.compile(r"(Queued|Waiting to be queued|Drawing) \(relax\) · 0:0[1-9]")
        )
        job_id = await job.get_attribute("data-id")

        grid = page.locator(f'article.message[data-id="{job_id}"]')
        await expect(grid.locator('.btn[data-custom-id^="gb:upscale1:"]')).to_be_visible()
        await expect(grid.locator("img")).to_have_count(1)
        await expect(grid).to_contain_text("Imagined — a lighthouse")
        await expect(bot_messages).to_have_count(1)

        await grid.locator(".btn", has_text="U1").click()
        await expect(grid.locator(".btn", has_text="U1")).to_have_class(re.compile("btn-primary"))
        upscale = page.locator("article.message.kind-bot").filter(
            has=page.locator('.btn[data-custom-id^="gb:vary_region:"]')
        )
        await expect(upscale.locator("img")).to_have_count(1)
        await expect(bot_messages).to_have_count(2)

        pill = page.locator("#new-below")
        await expect(pill).to_be_hidden()
        await page.locator("#messages").evaluate(
            "(list) => { list.scrollTop = 0; list.dispatchEvent(new Event('scroll')); }"
        )
        await upscale.locator(".btn", has_text="Vary (Region)").evaluate(
            "(button) => button.click()"
        )
        dialog = page.locator("dialog#modal")
        await expect(dialog.locator(".region-editor")).to_be_visible()
        stage = dialog.locator(".region-stage img")
        async with asyncio.timeout(WAIT_MS / 1000):
            assert await stage.evaluate("(img) => img.decode().then(() => true)")
        canvas = dialog.locator("canvas.region-canvas")
        box = await canvas.bounding_box()
        assert box is not None and box["width"] > 100
        undo = dialog.locator(".btn", has_text="Undo")
        await expect(undo).to_be_disabled()
        await drag(page, box, [(0.1, 0.1), (0.5, 0.6)])
        await expect(undo).to_be_enabled()
        lasso = dialog.locator('.btn[data-tool="lasso"]')
        await lasso.click()
        region = dialog.locator('input[name="region"]')
        for corner in (0.6, 0.8):
            loop = [(corner, corner), (corner + 0.15, corner), (corner + 0.15, corner + 0.15)]
            await drag(page, box, [*loop, (corner, corner + 0.15)])
            await expect(lasso).to_have_attribute("aria-pressed", "true")
        two_loops = re.compile(r"^[\d.,]+; polygon [\d. ]+; polygon [\d. ]+$")
        await expect(region).to_have_value(two_loops)
        await undo.click()
        await undo.click()
        await expect(region).to_have_value(
            re.compile(r"^\d+(\.\d)?,\d+(\.\d)?,\d+(\.\d)?,\d+(\.\d)?$")
        )
        await dialog.locator('textarea[name="prompt"]').fill("a red door")
        await dialog.locator('button[type="submit"]').click()

        await expect(upscale.locator(".btn", has_text="Vary (Region)")).to_have_class(
            re.compile("btn-primary")
        )
        await expect(pill).to_be_visible()
        await pill.click()
        await expect(pill).to_be_hidden()
        [inpaint] = stack.sim.state.requests_to("/gen/v2/inpaint")
        assert inpaint.body["prompt"] == "a red door"
        mask = Image.open(io.BytesIO(base64.b64decode(inpaint.body["mask"])))
        width, height = mask.size

        def at(fx: float, fy: float) -> int:
            value = mask.getpixel((int(fx * width), int(fy * height)))
            assert isinstance(value, int), "the mask is one grey channel"
            return value

        assert at(0.3, 0.35) == 255, "inside the drawn rectangle"
        assert at(0.05, 0.05) == at(0.8, 0.8) == at(0.3, 0.8) == 0, "outside it (both loops undone)"
        assert tab.errors == []


async def test_describe_shows_the_image_and_imagine_all_starts_its_prompts(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    roomy = LimitsSettings(
        poll_interval_min=0.01, poll_interval_max=0.1, max_concurrent_jobs_per_user=5
    )
    async with real_stack(tmp_path, limits=roomy) as stack, user(chromium_browser) as tab:
        page = tab.page
        await tab.open(stack.url + "/")

        picture = io.BytesIO()
        Image.new("RGB", (64, 48), "teal").save(picture, format="PNG")
        upload: FilePayload = {
            "name": "cat.png",
            "mimeType": "image/png",
            "buffer": picture.getvalue(),
        }
        await page.locator('#composer-slot input[type="file"]').set_input_files(files=[upload])
        await expect(page.locator("#composer-slot .tray-item:not(.uploading)")).to_have_count(1)
        box = page.locator("#composer-slot textarea")
        await box.fill("/describe")
        await box.press("Enter")
        await expect(box).to_have_value("")

        described = page.locator("article.message.kind-bot").filter(
            has=page.locator('.btn[data-custom-id^="gb:describe_all:"]')
        )
        await expect(described.locator("img")).to_have_count(1)
        await expect(described.locator(".btn")).to_have_text(
            ["1", "2", "3", "4", "🔄", "Imagine all", "⋯"]
        )
        await expect(described).to_contain_text("Described — four prompts for your image")

        await described.locator(".btn", has_text="Imagine all").click()
        preview = page.locator("article.message", has_text="4 jobs of /imagine")
        await expect(preview).to_have_count(1, timeout=WAIT_MS)
        assert stack.sim.state.requests_to("/gen/v2/imagine") == [], "nothing before Run"
        await preview.locator(".btn", has_text="Run 4 jobs").click()
        await expect(described.locator(".btn", has_text="Imagine all")).to_have_class(
            re.compile("btn-primary")
        )
        grids = page.locator("article.message.kind-bot").filter(
            has=page.locator('.btn[data-custom-id^="gb:upscale1:"]')
        )
        await expect(grids).to_have_count(4)
        [describe] = stack.sim.state.requests_to("/gen/v2/describe")
        imagined = [r.body["prompt"] for r in stack.sim.state.requests_to("/gen/v2/imagine")]
        assert len(imagined) == 4 and len(set(imagined)) == 4
        assert describe.body["image_url"].endswith(".png")

        await page.set_viewport_size({"width": 380, "height": 700})
        sidebar = page.locator("nav.sidebar")
        await expect(page.locator("#drawer-toggle")).to_be_visible()
        await expect(sidebar).not_to_be_in_viewport()
        await page.locator("#drawer-toggle").click()
        await expect(sidebar).to_be_in_viewport()
        await sidebar.locator("a.channel", has_text="art").click()
        await expect(page.locator("#channel-name")).to_have_text("art")
        await expect(sidebar).not_to_be_in_viewport()
        assert tab.errors == []
