"""The playground in real headless Chromium, on the real core and the provider simulator:
imagine a grid, press U1, see the upscale's follow-ups, chat and see the streamed reply complete.

Chromium is Debian's (``/usr/bin/chromium``, installed by ``.ci/run`` when missing), driven by the
``playwright`` package through ``executable_path``; its own browser download is never used.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from tests.genbot.stack import real_stack

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 15_000


def chromium_path() -> str:
    """Debian's chromium; the test fails (never skips) when it is missing."""
    for candidate in ("/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail(
        "Chromium is not installed: the browser test needs Debian's chromium at "
        "/usr/bin/chromium (`apt-get install chromium`; .ci/run does it when missing)."
    )


@asynccontextmanager
async def chromium(extra_args: list[str] | None = None) -> AsyncIterator[Browser]:
    """A headless Chromium started from the system's binary (with ``extra_args``)."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium_path(),
            args=[*CHROMIUM_ARGS, *(extra_args or [])],
            timeout=WAIT_MS,
        )
        try:
            yield browser
        finally:
            await browser.close()


async def send(page: Page, text: str) -> None:
    """Type ``text`` in the message box and press Enter."""
    box = page.locator("#composer-slot textarea")
    await box.fill(text)
    await box.press("Enter")
    await expect(box).to_have_value("", timeout=WAIT_MS)


async def test_imagine_upscale_and_chat_in_a_real_browser(tmp_path: Path) -> None:
    answer = "The lighthouse keeper waves from the gallery deck."
    async with real_stack(tmp_path) as stack, chromium() as browser:
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(WAIT_MS)
        page_errors: list[str] = []
        page.on("pageerror", lambda error: page_errors.append(str(error)))
        await page.goto(stack.url + "/")
        await expect(page.locator(".connection.live")).to_be_visible(timeout=WAIT_MS)

        await send(page, "/imagine a lighthouse")
        grid = page.locator("article.message.kind-bot").filter(
            has=page.locator('.btn[data-custom-id^="gb:upscale1:"]')
        )
        await expect(grid).to_have_count(1, timeout=WAIT_MS)
        await expect(grid.locator("img")).to_have_count(1, timeout=WAIT_MS)
        await expect(grid.locator(".btn")).to_have_text(
            ["U1", "U2", "U3", "U4", "🔄", "V1", "V2", "V3", "V4", "🌱 Seed"]
        )
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

        await send(page, f"echo: {answer}")
        reply = page.locator("article.message.kind-bot .text", has_text=answer)
        await expect(reply).to_have_text(answer, timeout=WAIT_MS)
        await expect(page.locator("article.message.kind-bot", has_text="▌")).to_have_count(
            0, timeout=WAIT_MS
        )
        assert page_errors == []
