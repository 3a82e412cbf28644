"""Driving the playground in Debian's Chromium: the browser, users' pages and common gestures.

Chromium is Debian's (``/usr/bin/chromium``, installed by ``make browser`` when missing), driven by
the ``playwright`` package through ``executable_path``; its own browser download is never used.
One browser serves every browser test of a run (the ``chromium_browser`` fixture); each user is a
fresh browser context (its own cookies: its own playground identity).
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.async_api import (
    Browser,
    FloatRect,
    Locator,
    Page,
    ViewportSize,
    async_playwright,
    expect,
)

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 15_000
DESKTOP = {"width": 1280, "height": 900}


def chromium_path() -> str:
    """Debian's chromium; the test fails (never skips) when it is missing."""
    for candidate in ("/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail(
        "Chromium is not installed: the browser test needs Debian's chromium at "
        "/usr/bin/chromium (`apt-get install chromium`; make browser does it when missing)."
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


@dataclass
class Tab:
    """One playground page; ``errors``: the page's uncaught script errors."""

    page: Page
    errors: list[str] = field(default_factory=list)

    @property
    def box(self) -> Locator:
        return self.page.locator("#composer-slot textarea")

    async def send(self, text: str) -> None:
        """Type ``text`` in the message box and press Enter."""
        await send(self.page, text)

    def bot_messages(self) -> Locator:
        return self.page.locator("#messages article.message.kind-bot")

    def with_button(self, prefix: str, within: str = "#messages") -> Locator:
        """genbot's messages (in ``within``) with a button whose custom id starts ``prefix``."""
        page = self.page
        return page.locator(f"{within} article.message.kind-bot").filter(
            has=page.locator(f'.btn[data-custom-id^="{prefix}"]')
        )

    async def open(self, url: str) -> None:
        await self.page.goto(url)
        await expect(self.page.locator(".connection.live")).to_be_visible(timeout=WAIT_MS)


@asynccontextmanager
async def user(
    browser: Browser,
    url: str | None = None,
    *,
    width: int = 1280,
    height: int = 900,
    locale: str | None = None,
) -> AsyncIterator[Tab]:
    """A new playground user (a browser context of its own) with one page, at ``url`` when
    given (waiting until it is live); ``locale``: the browser's language (Accept-Language)."""
    viewport: ViewportSize = {"width": width, "height": height}
    context = await browser.new_context(viewport=viewport, locale=locale)
    try:
        tab = await new_tab(context.new_page)
        if url is not None:
            await tab.open(url)
        yield tab
    finally:
        await context.close()


async def new_tab(opener: Callable[[], Awaitable[Page]]) -> Tab:
    """A page made by ``opener`` (a context's ``new_page``: the same user), errors recorded."""
    page = await opener()
    page.set_default_timeout(WAIT_MS)
    tab = Tab(page)
    page.on("pageerror", lambda error: tab.errors.append(str(error)))
    return tab


async def send(page: Page, text: str) -> None:
    """Type ``text`` in the message box and press Enter."""
    box = page.locator("#composer-slot textarea")
    await box.fill(text)
    await box.press("Enter")
    await expect(box).to_have_value("", timeout=WAIT_MS)


async def drag(page: Page, box: FloatRect, points: list[tuple[float, float]]) -> None:
    """Press the mouse at the first point of ``box`` (fractions), move through the others,
    release at the last."""
    x, y = box["x"], box["y"]
    width, height = box["width"], box["height"]
    await page.mouse.move(x + points[0][0] * width, y + points[0][1] * height)
    await page.mouse.down()
    for fx, fy in points[1:]:
        await page.mouse.move(x + fx * width, y + fy * height, steps=4)
    await page.mouse.up()
