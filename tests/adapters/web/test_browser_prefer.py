"""The playground in real headless Chromium: a saved option (``/prefer``) is offered among
``/imagine``'s option chips, and a command of several jobs shows its preview, whose Run starts
them — on the real core and the provider simulator."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.adapters.web.browser import WAIT_MS, send, user
from tests.genbot.stack import real_stack

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_saved_options_are_chips_and_a_preview_runs(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with real_stack(tmp_path) as stack, user(chromium_browser) as tab:
        page = tab.page
        await tab.open(stack.url + "/")
        await send(page, "/prefer option set neon --style raw")
        await expect(page.get_by_text("Saved: --neon stands for")).to_be_visible(timeout=WAIT_MS)

        await tab.box.fill("/imagine a city ")
        chip = page.locator(".hint .chip.saved")
        await expect(chip).to_have_text(["--neon"], timeout=WAIT_MS)

        await send(page, "/imagine {red, blue} fox")
        preview = page.locator("article.message", has_text="2 jobs of /imagine")
        await expect(preview).to_have_count(1, timeout=WAIT_MS)
        await preview.locator(".btn", has_text="Run 2 jobs").click()
        await expect(page.get_by_text("All 2 jobs started.")).to_be_visible(timeout=WAIT_MS)
        prompts = sorted(r.body["prompt"] for r in stack.sim.state.requests_to("/gen/v2/imagine"))
        assert prompts == ["blue fox", "red fox"]
        assert tab.errors == []
