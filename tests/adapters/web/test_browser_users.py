"""Two users in Chromium on the demo's wiring: a job's buttons are its requester's, ❌ Cancel
included; the demo's admin link (and only it) makes a browser an admin, who may press them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from bot.kernel import LimitsSettings
from tests.adapters.web.browser import user
from tests.genbot.stack import real_stack
from tests.sim_time import freeze, resume

pytestmark = pytest.mark.asyncio(loop_scope="session")

SLOW_ENOUGH_TO_CANCEL = LimitsSettings(poll_interval_min=0.05, poll_interval_max=0.2)
REFUSED = "Only the person who started this job can"


async def test_a_jobs_buttons_are_its_requesters_until_the_admin_link_is_opened(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with (
        real_stack(tmp_path, time_scale=0.03, limits=SLOW_ENOUGH_TO_CANCEL, demo=True) as stack,
        user(chromium_browser, stack.url + "/") as alice,
        user(chromium_browser, stack.url + "/") as bob,
    ):
        freeze(stack.sim)
        await alice.send("/imagine a lighthouse")
        running = bob.with_button("gb:cancel:")
        await running.locator(".btn", has_text="❌ Cancel").click()
        bobs_notes = bob.page.locator("#messages article.kind-ephemeral")
        await expect(bobs_notes.last).to_contain_text(REFUSED)
        resume(stack.sim)

        grid = alice.with_button("gb:upscale1:")
        await expect(grid.locator("img")).to_have_count(1)
        bobs_grid = bob.with_button("gb:upscale1:")
        await expect(bobs_grid.locator(".btn.foreign")).to_have_count(11)
        await bobs_grid.locator(".btn", has_text="U2").click()
        await expect(bobs_notes).to_have_count(2)
        await expect(bobs_notes.last).to_contain_text(REFUSED)
        assert stack.sim.state.requests_to("/gen/v2/upscale") == []

        admin_url = stack.runtime.web_admin_url
        assert admin_url is not None and "admin=" in admin_url
        await bob.open(admin_url)
        assert bob.page.url in (stack.url + "/", stack.url + "/#general"), "the token is gone"
        await expect(bob.page.locator("#me-id")).to_contain_text("admin")
        await expect(alice.page.locator("#me-id")).not_to_contain_text("admin")
        await bob.with_button("gb:upscale1:").locator(".btn", has_text="U2").click()
        upscale = alice.with_button("gb:vary_region:")
        await expect(upscale.locator("img")).to_have_count(1)
        await expect(grid.locator(".btn", has_text="U2")).to_have_class(re.compile("btn-primary"))
        assert alice.errors == bob.errors == []


async def test_a_tab_outliving_its_server_gets_a_new_session_and_keeps_its_draft(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    draft = "a draft typed before the restart"
    async with user(chromium_browser) as tab:
        async with real_stack(tmp_path / "first", demo=True) as first:
            url = first.url
            await tab.open(url + "/")
            await tab.page.locator("#dm-list a.channel").click()
            await expect(tab.page.locator("#channel-name")).to_have_text("genbot")
            old_dm = await tab.page.evaluate("() => location.hash.slice(1)")
            old_me = await tab.page.locator("#me-id").text_content()
            await tab.box.fill(draft)
        await expect(tab.page.locator("#connection")).not_to_have_class(re.compile("live"))

        port = int(url.rsplit(":", 1)[1])
        async with real_stack(tmp_path / "second", demo=True, port=port):
            await expect(tab.page.locator(".connection.live")).to_be_visible()
            await expect(tab.page.locator("#me-id")).not_to_have_text(old_me or "")
            await expect(tab.page.locator("#channel-name")).to_have_text("genbot")
            assert await tab.page.evaluate("() => location.hash.slice(1)") != old_dm
            await expect(tab.box).to_have_value(draft)
            await tab.box.press("Enter")
            sent = tab.page.locator("#messages article.kind-user", has_text=draft)
            await expect(sent).to_be_visible()

            async with user(chromium_browser) as stranger:
                await stranger.page.goto(f"{url}/#{old_dm}")
                await expect(stranger.page.locator(".connection.live")).to_be_visible()
                await expect(stranger.page.locator("#channel-name")).to_have_text("genbot")
                await expect(stranger.page.locator("#channel-list a.channel")).to_have_count(3)
                assert stranger.errors == []
        assert tab.errors == []


GUEST_COLOURS = ("#e67e22", "#1abc9c", "#e91e63", "#9b59b6", "#3498db", "#f1c40f")


def guest_colour(user_id: str) -> str:
    """The computed ``background-color`` of a guest's avatar, as render.js picks it."""
    tag = user_id[-4:]
    digits = re.match(r"[0-9a-fA-F]*", tag)
    hex_digits = digits.group(0) if digits else ""
    colour = GUEST_COLOURS[int(hex_digits, 16) % len(GUEST_COLOURS)] if hex_digits else "#e67e22"
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({red}, {green}, {blue})"


async def test_a_guests_avatar_has_its_colour_under_the_pages_security_policy(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with (
        real_stack(tmp_path, demo=True) as stack,
        user(chromium_browser, stack.url + "/") as alice,
        user(chromium_browser, stack.url + "/") as bob,
    ):
        refused: list[str] = []
        alice.page.on(
            "console",
            lambda message: (
                refused.append(message.text) if "Content Security Policy" in message.text else None
            ),
        )
        bob_id = await bob.page.locator("#me-id").text_content()
        assert bob_id
        await bob.send("hello from bob")
        bobs = alice.page.locator("#messages article.kind-user", has_text="hello from bob")
        avatar = bobs.locator(".avatar.guest")
        await expect(avatar).to_have_css("background-color", guest_colour(bob_id))
        await alice.page.evaluate("() => 0")
        assert refused == []
        assert alice.errors == bob.errors == []
