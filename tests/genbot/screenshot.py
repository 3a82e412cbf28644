"""Take the README's screenshot of the playground, and its frames of one job, from the real app.

    .venv/bin/python -m tests.genbot.screenshot docs/playground.png
    .venv/bin/python -m tests.genbot.screenshot --language de docs/playground-de.png
    .venv/bin/python -m tests.genbot.screenshot --frames docs/job

Runs the demo stack (simulator, real core, web adapter) and Debian's chromium through playwright:
imagines a lighthouse, presses U1, asks genbot a short question in a thread, then saves the
1280x900 window with the grid (U1 marked) and the thread in view. ``--frames PREFIX`` saves the
one message of one job as it moves: ``PREFIX-1.png`` queued, ``-2`` drawing, ``-3`` the grid,
``-4`` U1 pressed (after one job like it ran in #lab, so its time left is measured).
``--language TAG`` takes it in a browser speaking that language (the page and genbot speak it
too; the prompt stays as typed). Emoji
need a colour emoji font (Debian's ``fonts-noto-color-emoji``) to look right; nothing else
depends on it.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
from pathlib import Path

from playwright.async_api import Page, async_playwright, expect

from bot.kernel import LimitsSettings
from tests.adapters.web.browser import CHROMIUM_ARGS, chromium_path, send
from tests.genbot.stack import FAST_POLLING, real_stack

TICKING = LimitsSettings(poll_interval_min=0.05, poll_interval_max=0.2, progress_tick_seconds=1.0)

PROMPT = "/imagine a lighthouse at dusk --ar 16:9"
QUESTION = "@genbot Suggest a title for this lighthouse picture"
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
    answer = page.locator("#thread-messages article.message.kind-bot").last
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


async def measured(page: Page) -> None:
    """Run one job like the framed one to its end in #lab, so that genbot has measured how
    long such a job takes (the frames then show the time left), and come back to #general."""
    await page.goto(page.url.split("#")[0] + "#lab")
    await expect(page.locator("#channel-name")).to_have_text("lab", timeout=WAIT_MS)
    await send(page, PROMPT)
    grid = page.locator("article.message.kind-bot .btn", has_text="U1")
    await expect(grid).to_be_visible(timeout=WAIT_MS)
    await page.goto(page.url.split("#")[0] + "#general")
    await expect(page.locator("#channel-name")).to_have_text("general", timeout=WAIT_MS)


async def frames(page: Page, prefix: Path) -> list[Path]:
    """Screenshots of one job's one message as it moves (see the module docstring)."""
    await expect(page.locator(".connection.live")).to_be_visible(timeout=WAIT_MS)
    await measured(page)
    await send(page, PROMPT)
    job = page.locator("article.message.kind-bot").first
    saved: list[Path] = []

    async def shot(number: int) -> None:
        await page.locator(".typing").first.evaluate("(typing) => typing.replaceChildren()")
        path = prefix.with_name(f"{prefix.name}-{number}.png")
        await job.screenshot(path=str(path))
        saved.append(path)

    await expect(job).to_contain_text("Queued", timeout=WAIT_MS)
    await shot(1)
    await expect(job).to_contain_text("Drawing", timeout=WAIT_MS)
    await expect(job).to_contain_text(":0", timeout=WAIT_MS)
    await shot(2)
    await expect(job.locator(".btn", has_text="U1")).to_be_visible(timeout=WAIT_MS)
    await page.wait_for_function(
        "[...document.images].every((image) => image.complete && image.naturalWidth > 0)"
    )
    await shot(3)
    await job.locator(".btn", has_text="U1").click()
    await expect(job.locator(".btn", has_text="U1")).to_have_class(re.compile("btn-primary"))
    await shot(4)
    return saved


async def main(
    output: Path, time_scale: float, frame_prefix: Path | None, language: str | None = None
) -> None:
    with tempfile.TemporaryDirectory(prefix="genbot-screenshot-") as data:
        limits = TICKING if frame_prefix is not None else FAST_POLLING
        async with (
            real_stack(Path(data), time_scale=time_scale, limits=limits) as stack,
            async_playwright() as pw,
        ):
            browser = await pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page(
                    viewport={"width": 1280, "height": 900}, locale=language
                )
                page.set_default_timeout(WAIT_MS)
                await page.goto(stack.url + "/")
                if frame_prefix is not None:
                    for path in await frames(page, frame_prefix):
                        print(f"saved {path}")
                    return
                await stage(page)
                await page.wait_for_timeout(300)
                await page.screenshot(path=str(output))
            finally:
                await browser.close()
    print(f"saved {output}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, nargs="?", default=Path("docs/playground.png"))
    parser.add_argument("--time-scale", type=float, default=0.05)
    parser.add_argument("--frames", type=Path, default=None, help="save a job's frames instead")
    parser.add_argument("--language", default=None, help="the browser's language (de, ja…)")
    arguments = parser.parse_args()
    scale = arguments.time_scale if arguments.frames is None else max(arguments.time_scale, 0.15)
    asyncio.run(main(arguments.output, scale, arguments.frames, arguments.language))
