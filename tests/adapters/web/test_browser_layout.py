"""The playground's layout and feedback in Chromium on the real core: /chat opens its thread,
the channel keeps room beside it at tablet widths and on phones, feedback for a user lands in
view (the pill, a jump link), images enlarge, channels are named in place, and errors belong to
the channel they were made in."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import Browser, FilePayload, Locator, expect

from tests.adapters.web.browser import Tab, user
from tests.genbot.stack import real_stack

pytestmark = pytest.mark.asyncio(loop_scope="session")

FITS = """(box) => {
    const context = document.createElement("canvas").getContext("2d");
    context.font = getComputedStyle(box).font;
    return context.measureText(box.placeholder).width <= box.clientWidth;
}"""
ONE_LINE = "(times) => times.map((time) => time.getBoundingClientRect().height)"


async def placeholder_fits(box: Locator) -> bool:
    return bool(await box.evaluate(FITS))


async def layout_holds(tab: Tab) -> None:
    """Timestamps stay on one line and the composers' placeholders are not clipped."""
    heights = await tab.page.locator("time").evaluate_all(ONE_LINE)
    assert max(heights, default=0) < 24, heights
    for box in await tab.page.locator(".composer textarea:visible").all():
        assert await placeholder_fits(box), await box.get_attribute("placeholder")


async def test_threads_leave_the_channel_room_and_feedback_lands_in_view(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with (
        real_stack(tmp_path) as stack,
        user(chromium_browser, stack.url + "/", width=900, height=800) as tab,
    ):
        page = tab.page
        await tab.send("/chat echo: a quiet harbour")
        thread = page.locator("#thread-panel")
        await expect(thread).to_be_visible()
        await expect(thread.locator("article.kind-bot .text").last).to_have_text("a quiet harbour")
        assert await page.locator("#messages").evaluate("(list) => list.clientWidth") >= 420
        await expect(page.locator("nav.sidebar")).not_to_be_in_viewport()
        await layout_holds(tab)
        for width in (760, 1100):
            await page.set_viewport_size({"width": width, "height": 800})
            assert await page.locator("#messages").evaluate("(list) => list.clientWidth") >= 400
            await layout_holds(tab)
        await page.locator("#thread-close").click()
        await page.set_viewport_size({"width": 1280, "height": 700})
        await expect(page.locator("nav.sidebar")).to_be_in_viewport()

        await tab.send("/imagine a lighthouse")
        grid = tab.with_button("gb:upscale1:")
        await expect(grid.locator("img")).to_have_count(1)
        await grid.locator(".btn", has_text="U1").click()
        upscale = tab.with_button("gb:vary_region:")
        await expect(upscale.locator("img")).to_have_count(1)
        await grid.locator("img").click()
        enlarged = page.locator("#lightbox img")
        box = await enlarged.bounding_box()
        assert box is not None and box["width"] > 1000, "the image fills the window"
        await page.keyboard.press("Escape")

        pill = page.locator("#new-below")
        await page.locator("#messages").evaluate(
            "(list) => { list.scrollTop = 0; list.dispatchEvent(new Event('scroll')); }"
        )
        await grid.locator(".btn", has_text="U1").evaluate("(button) => button.click()")
        await expect(pill).to_be_visible()
        await pill.click()
        already = page.locator("#messages article.kind-ephemeral", has_text="already pressed")
        jump = already.locator("a", has_text="here is the result")
        await expect(jump).to_be_visible()
        await jump.click()
        await expect(upscale).to_have_class(re.compile("flash"))
        assert tab.errors == []


async def test_small_screens_channels_named_in_place_and_errors_that_stay_put(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with (
        real_stack(tmp_path) as stack,
        user(chromium_browser, stack.url + "/", width=400, height=760) as tab,
    ):
        page = tab.page
        await layout_holds(tab)
        await tab.send("good morning from a small screen")
        await layout_holds(tab)
        archive: FilePayload = {"name": "a.zip", "mimeType": "application/zip", "buffer": b"hi"}
        await page.locator('#composer-slot input[type="file"]').set_input_files(files=[archive])
        error = page.locator("#composer-slot .composer-error")
        await expect(error).to_contain_text("not an image")

        await page.locator("#drawer-toggle").click()
        await page.locator("#add-channel").click()
        name = page.locator("#new-channel input")
        await name.fill("Not A Name!")
        await name.press("Enter")
        await expect(page.locator("#new-channel .new-channel-error")).to_be_visible()
        await name.fill("harbour")
        await name.press("Enter")
        await expect(page.locator("#channel-name")).to_have_text("harbour")
        await expect(error).to_be_hidden()
        await layout_holds(tab)
        assert tab.errors == []
