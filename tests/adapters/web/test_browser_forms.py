"""Forms in the playground, in Chromium on the real core: a refused value keeps the form open
with every typed value and the sentence beside the field, every time; a refusal the core sends
back while the submission's answer is still on its way is not closed by that answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from playwright.async_api import Browser, Locator, Route, expect

from tests.adapters.web.browser import Tab, new_tab, user
from tests.genbot.stack import real_stack

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def press(tab: Tab, message: Locator, label: str) -> Locator:
    """Press ``label`` on ``message``; the form it opens."""
    await message.locator(".btn", has_text=label).click()
    dialog = tab.page.locator("dialog#modal")
    await expect(dialog).to_be_visible()
    return dialog


async def refused(dialog: Locator, field: str, error: str) -> None:
    """Submit ``dialog``: it stays open, ``error`` beside ``field``."""
    await dialog.locator('button[type="submit"]').click()
    beside = dialog.locator(f'.field[data-field="{field}"] .field-error')
    await expect(beside).to_have_text(error)
    await expect(dialog).to_be_visible()


async def test_refused_values_stay_in_the_open_form_beside_their_field(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with real_stack(tmp_path) as stack, user(chromium_browser) as tab:
        await tab.open(stack.url + "/")
        await tab.send("/imagine a lighthouse")
        grid = tab.with_button("gb:upscale1:")
        await expect(grid.locator("img")).to_have_count(1)
        await grid.locator(".btn", has_text="U1").click()
        upscale = tab.with_button("gb:outpaint_custom:")
        await expect(upscale.locator("img")).to_have_count(1)

        dialog = await press(tab, upscale, "Custom Zoom")
        await dialog.locator('input[name="zoom_value"]').fill("3")
        await dialog.locator('textarea[name="prompt"]').fill("a wider lighthouse")
        for _ in range(3):
            await refused(dialog, "zoom_value", "The zoom must be above 1 and at most 2 (got 3).")
            await expect(dialog.locator('input[name="zoom_value"]')).to_have_value("3")
            await expect(dialog.locator('textarea[name="prompt"]')).to_have_value(
                "a wider lighthouse"
            )
        await dialog.locator('input[name="zoom_value"]').fill("1.5")
        await dialog.locator('button[type="submit"]').click()
        await expect(dialog).to_be_hidden()
        zoomed = tab.with_button("gb:upscale1:").filter(has_text="a wider lighthouse")
        await expect(zoomed.locator("img")).to_have_count(1)
        assert stack.sim.state.requests_to("/gen/v2/outpaint")[0].body["zoom_ratio"] == "1.5"

        dialog = await press(tab, upscale, "Vary (Region)")
        await refused(dialog, "region", "Which part of the image should change? Pick an area, "
                      "draw one, or give x,y,w,h in percent.")  # fmt: skip
        await dialog.locator(".btn", has_text="Cancel").click()

        await tab.send("/diffusion txt2img a fox")
        diffused = tab.with_button("gb:diff_init:")
        await expect(diffused.locator("img")).to_have_count(1)
        dialog = await press(tab, diffused, "Use as init")
        await dialog.locator('input[name="strength"]').fill("1.7")
        await refused(dialog, "strength", "strength must be at most 1 (got 1.7).")
        await expect(dialog.locator('textarea[name="prompt"]')).to_have_value("a fox")
        assert stack.sim.state.requests_to("/diff/img2img") == []

        await dialog.locator(".btn", has_text="Cancel").click()
        await tab.send("/settings")
        await expect(dialog).to_be_visible()
        await dialog.locator('input[name="temperature"]').fill("9")
        await dialog.locator('input[name="aspect_ratio"]').fill("16:9")
        await refused(dialog, "temperature", "temperature must be at most 2 (got 9).")
        await expect(dialog.locator('input[name="aspect_ratio"]')).to_have_value("16:9")
        assert tab.errors == []


async def test_a_refusal_arriving_before_the_answer_keeps_the_form_open(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with real_stack(tmp_path, plan="free") as stack, user(chromium_browser) as tab:
        await tab.open(stack.url + "/")
        await tab.send("/settings")
        dialog = tab.page.locator("dialog#modal")
        await expect(dialog).to_be_visible()
        notice = dialog.locator(".modal-notice")

        async def answer_after_the_refusal(route: Route) -> None:
            answer = await route.fetch()
            await expect(notice).to_contain_text("needs the Developer plan")
            await route.fulfill(response=answer)

        await tab.page.route("**/api/modal", answer_after_the_refusal)
        await dialog.locator('input[name="model"]').fill("llm-4")
        await dialog.locator('input[name="aspect_ratio"]').fill("2:3")
        await dialog.locator('button[type="submit"]').click()
        await expect(notice).to_contain_text("needs the Developer plan")
        await asyncio.sleep(0.3)
        await expect(dialog).to_be_visible()
        await expect(dialog.locator('input[name="model"]')).to_have_value("llm-4")
        await expect(dialog.locator('input[name="aspect_ratio"]')).to_have_value("2:3")
        assert tab.errors == []


async def test_a_form_opens_only_in_the_tab_that_asked(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with real_stack(tmp_path) as stack, user(chromium_browser, stack.url + "/") as first:
        second = await new_tab(first.page.context.new_page)
        await second.open(stack.url + "/")
        await second.send("/settings")
        await expect(second.page.locator("dialog#modal")).to_be_visible()
        await first.send("/usage")
        usage = first.page.locator("#messages article.kind-ephemeral", has_text="Your usage")
        await expect(usage).to_be_visible()
        await expect(first.page.locator("dialog#modal")).to_be_hidden()
        assert first.errors == second.errors == []
