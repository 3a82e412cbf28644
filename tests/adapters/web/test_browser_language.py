"""The playground in another language, in Chromium: the page speaks the browser's language
until the switch under the user's name chooses one, which lasts (a cookie), and the events it
sends carry it."""

from __future__ import annotations

from playwright.async_api import expect

from adapters.web import WebAdapter
from bot.kernel import Command
from tests.adapters.web.browser import chromium, user
from tests.adapters.web.fakes import RecordingCore


async def test_the_switch_chooses_the_pages_language_and_it_lasts(
    adapter: WebAdapter, core: RecordingCore
) -> None:
    async with chromium() as browser, user(browser, adapter.url + "/", locale="ja-JP") as tab:
        page = tab.page
        await expect(page.locator("html")).to_have_attribute("lang", "ja")
        switch = page.locator("#language")
        await expect(switch.locator("option")).to_have_count(5)
        assert await switch.input_value() == "", "the browser's language until one is chosen"
        await switch.select_option("de")
        await expect(page.locator("html")).to_have_attribute("lang", "de")
        await expect(page.locator(".connection.live")).to_be_visible()
        assert await page.locator("#language").input_value() == "de"
        await tab.send("/help")
        (event,) = await core.wait_for_events(1)
        assert isinstance(event, Command) and event.locale == "de"
        await expect(page.locator("#add-channel")).not_to_have_attribute("title", "New channel")
        await expect(page.locator(".server-note")).not_to_have_text("runs on your machine")
        await page.reload()
        await expect(page.locator("html")).to_have_attribute("lang", "de")
        await page.locator("#language").select_option("")
        await expect(page.locator("html")).to_have_attribute("lang", "ja")
        assert tab.errors == []
