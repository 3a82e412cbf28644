"""Take the README's screenshot of the playground from the real app.

    .venv/bin/python -m tests.genbot.screenshot docs/playground.png

Runs the demo stack (simulator, real core, web adapter) and Debian's chromium through playwright:
imagines a lighthouse, presses U1, asks a short chat question, then saves the 1280x900 window with
the grid and its buttons in view. Emoji need a colour emoji font (Debian's
``fonts-noto-color-emoji``) to look right; nothing else depends on it.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from playwright.async_api import Page, async_playwright, expect

from tests.adapters.web.test_browser import CHROMIUM_ARGS, chromium_path, send
from tests.genbot.stack import real_stack

PROMPT = "/imagine a lighthouse at dusk --ar 16:9"
QUESTION = "Suggest a title for this lighthouse picture"
WAIT_MS = 30_000


async def stage(page: Page) -> None:
    """Drive the playground to the state the screenshot shows."""
    await expect(page.locator(".connection.live")).to_be_visible(timeout=WAIT_MS)
    await send(page, PROMPT)
    grid = page.locator("article.message.kind-bot").filter(
        has=page.locator('.btn[data-custom-id^="gb:upscale1:"]')
    )
    await expect(grid).to_have_count(1, timeout=WAIT_MS)
    await grid.locator(".btn", has_text="U1").click()
    upscale = page.locator("article.message.kind-bot").filter(
        has=page.locator('.btn[data-custom-id^="gb:high_variation:"]')
    )
    await expect(upscale).to_have_count(1, timeout=WAIT_MS)
    await send(page, QUESTION)
    answer = page.locator("article.message.kind-bot").last
    await expect(answer.locator(".text")).not_to_have_text("", timeout=WAIT_MS)
    await expect(page.locator("article.message.kind-bot", has_text="▌")).to_have_count(
        0, timeout=WAIT_MS
    )
    await page.wait_for_function(
        "[...document.images].every((image) => image.complete && image.naturalWidth > 0)"
    )
    await page.locator(".typing").first.evaluate("(typing) => typing.replaceChildren()")
    command = page.locator("article.message.kind-user", has_text="a lighthouse at dusk")
    await command.evaluate("(command) => command.scrollIntoView({block: 'start'})")


async def main(output: Path, time_scale: float) -> None:
    with tempfile.TemporaryDirectory(prefix="genbot-screenshot-") as data:
        async with real_stack(Path(data), time_scale=time_scale) as stack, async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(WAIT_MS)
                await page.goto(stack.url + "/")
                await stage(page)
                await page.wait_for_timeout(300)
                await page.screenshot(path=str(output))
            finally:
                await browser.close()
    print(f"saved {output}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--time-scale", type=float, default=0.05)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.output, arguments.time_scale))
