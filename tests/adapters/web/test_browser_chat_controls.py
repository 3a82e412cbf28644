"""An answer's controls in the playground, in real headless Chromium on the real core and the
provider simulator: ⏹ Stop while it streams, 👍 (drawn chosen, no message), then 🔁 (the old
answer stays, marked replaced); an edit in the page's multi-line editor.

The browser is the shared ``chromium_browser`` (see :mod:`tests.adapters.web.browser`).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.adapters.web.browser import WAIT_MS, user
from tests.genbot.stack import real_stack

pytestmark = pytest.mark.asyncio(loop_scope="session")
WORDS = " ".join(f"fox{number}" for number in range(300))


async def test_stop_feedback_and_regenerate_in_a_real_browser(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with real_stack(tmp_path, time_scale=5) as stack, user(chromium_browser) as tab:
        page = tab.page
        await tab.open(stack.url + "/")
        box = page.locator("#composer-slot textarea")
        await box.fill(f"@genbot echo: {WORDS}")
        await page.locator("#composer-slot .send-button").click()
        thread = page.locator("#thread-messages")
        streaming = thread.locator("article.message.kind-bot").filter(has_text="fox3 ")
        await expect(streaming.locator(".btn", has_text="⏹ Stop")).to_be_visible(timeout=WAIT_MS)
        # The answer 🔁 makes quotes the same message: only the first one's id tells them apart.
        answer = thread.locator(f'article[data-id="{await streaming.get_attribute("data-id")}"]')
        stop = answer.locator(".btn", has_text="⏹ Stop")
        await stop.click()
        await expect(answer.locator(".text")).to_contain_text("(stopped)", timeout=WAIT_MS)
        await expect(answer.locator(".btn")).to_have_text(["🔁", "👍", "👎"], timeout=WAIT_MS)
        assert "fox299" not in (await answer.locator(".text").inner_text())
        sent = stack.sim.state.stream_bytes[-1]
        await asyncio.sleep(0.5)
        assert stack.sim.state.stream_bytes[-1] == sent, "the simulator sent nothing after the stop"

        shown = await answer.locator(".text").inner_text()
        await answer.locator(".btn", has_text="👍").click()
        await expect(answer.locator(".btn", has_text="👍")).to_have_class(
            re.compile(r"\bbtn-primary\b"), timeout=WAIT_MS
        )
        await expect(answer.locator(".btn")).to_have_text(["🔁", "👍", "👎"])
        assert await answer.locator(".text").inner_text() == shown
        await expect(page.get_by_text("Thanks for the feedback")).to_have_count(0)

        await answer.locator(".btn", has_text="🔁").click()
        newer = streaming.filter(has=page.locator(".btn", has_text="⏹ Stop"))
        await expect(newer).to_have_count(1, timeout=WAIT_MS)
        await expect(answer.locator(".text")).to_contain_text(
            "replaced by a newer answer", timeout=WAIT_MS
        )
        await expect(answer.locator(".btn")).to_have_count(0)
        await newer.locator(".btn", has_text="⏹ Stop").click()
        await expect(thread.locator("article.message.kind-bot .btn", has_text="👍")).to_have_count(
            1, timeout=WAIT_MS
        )
        assert tab.errors == []


async def test_a_press_of_stop_held_while_the_answer_grows_stops_it(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    """The mouse goes down on ⏹ Stop, an edit of the streaming answer shows more text, the
    mouse goes up: that is a click on Stop (its button stays in the page through the edit; one
    taken out and put back loses the click)."""
    async with real_stack(tmp_path, time_scale=5) as stack, user(chromium_browser) as tab:
        page = tab.page
        await tab.open(stack.url + "/")
        await tab.send(f"@genbot echo: {WORDS}")
        streaming = page.locator("#thread-messages article.message.kind-bot").filter(
            has_text="fox3 "
        )
        stop = streaming.locator(".btn", has_text="⏹ Stop")
        await expect(stop).to_be_visible(timeout=WAIT_MS)
        answer = page.locator(f'article[data-id="{await streaming.get_attribute("data-id")}"]')

        await stop.hover()
        await page.mouse.down()
        words = await answer.locator(".text").evaluate("text => text.textContent")
        await expect(answer.locator(".text")).not_to_have_text(words, timeout=WAIT_MS)
        await page.mouse.up()

        await expect(answer.locator(".text")).to_contain_text("(stopped)", timeout=WAIT_MS)
        assert "fox299" not in (await answer.locator(".text").inner_text())
        assert tab.errors == []


async def test_edit_a_message_in_a_multi_line_editor_and_switch_between_its_versions(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with real_stack(tmp_path) as stack, user(chromium_browser) as tab:
        page = tab.page
        await tab.open(stack.url + "/")
        await page.locator("#composer-slot textarea").fill("@genbot echo: foxes")
        await page.locator("#composer-slot .send-button").click()
        thread = page.locator("#thread-messages")
        await expect(
            thread.locator("article.message.kind-bot .text", has_text="foxes")
        ).to_have_count(1, timeout=WAIT_MS)
        mine = page.locator("#messages article.message.kind-user", has_text="echo: foxes")
        await mine.locator(".edit-message").click()
        editor = page.locator("#edit-dialog textarea")
        await expect(editor).to_have_value("@genbot echo: foxes", timeout=WAIT_MS)
        await editor.press("Escape")
        await expect(editor).to_be_hidden(timeout=WAIT_MS)
        await mine.locator(".edit-message").click()
        await editor.fill("@genbot echo: otters\nand seals")
        await editor.press("Enter")
        await expect(editor).to_have_value("@genbot echo: otters\nand seals\n", timeout=WAIT_MS)
        await editor.press("Backspace")
        await editor.press("Control+Enter")
        await expect(editor).to_be_hidden(timeout=WAIT_MS)
        await expect(mine).to_contain_text("echo: otters", timeout=WAIT_MS)
        await expect(mine).to_contain_text("and seals", timeout=WAIT_MS)
        await expect(mine.locator(".edited-tag")).to_be_visible()
        note = thread.locator("article.message.kind-bot", has_text="Version")
        await expect(note).to_contain_text("Version 2 of 2", timeout=WAIT_MS)
        await expect(
            thread.locator("article.message.kind-bot .text", has_text="otters")
        ).to_have_count(1, timeout=WAIT_MS)
        await note.locator(".btn", has_text="‹").click()
        await expect(note).to_contain_text("Version 1 of 2", timeout=WAIT_MS)
        assert tab.errors == []
