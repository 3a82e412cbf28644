"""An answer's controls in the playground, in real headless Chromium on the real core and the
provider simulator: ⏹ Stop while it streams, 👍, then 🔁 (the old answer stays, marked
replaced).

The browser is the shared ``chromium_browser`` (see :mod:`tests.adapters.web.browser`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.adapters.web.browser import WAIT_MS, user
from tests.genbot.stack import real_stack

pytestmark = pytest.mark.asyncio(loop_scope="session")
WORDS = " ".join(f"fox{number}" for number in range(150))


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
        answer = thread.locator("article.message.kind-bot").filter(has_text="fox3 ")
        stop = answer.locator(".btn", has_text="⏹ Stop")
        await expect(stop).to_be_visible(timeout=WAIT_MS)
        await stop.click()
        await expect(answer.locator(".text")).to_contain_text("(stopped)", timeout=WAIT_MS)
        await expect(answer.locator(".btn")).to_have_text(["🔁", "👍", "👎"], timeout=WAIT_MS)
        assert "fox149" not in (await answer.locator(".text").inner_text())
        assert stack.sim.state.stream_bytes[-1] < len(WORDS) * 3

        await answer.locator(".btn", has_text="👍").click()
        await expect(page.get_by_text("Thanks for the feedback")).to_be_visible(timeout=WAIT_MS)

        await answer.locator(".btn", has_text="🔁").click()
        await expect(answer.locator(".text")).to_contain_text(
            "replaced by a newer answer", timeout=WAIT_MS
        )
        await expect(answer.locator(".btn")).to_have_count(0)
        newer = thread.locator("article.message.kind-bot").filter(
            has=page.locator(".btn", has_text="⏹ Stop")
        )
        await expect(newer).to_have_count(1, timeout=WAIT_MS)
        await newer.locator(".btn", has_text="⏹ Stop").click()
        await expect(thread.locator("article.message.kind-bot .btn", has_text="👍")).to_have_count(
            1, timeout=WAIT_MS
        )
        assert tab.errors == []
