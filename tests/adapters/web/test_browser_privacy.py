"""What each user sees, in Chromium on the real core: a command whose answers only its user sees
stays private (the answer quotes it, and the user's next public message does not join its
group); one genbot answers in public is shown to everyone; a user's name in the sidebar is the
one others see; a command genbot answers in public only after the user's next message takes its
place before that message, in the live page and after a reload; control characters and
bidirectional overrides are shown as escapes, not obeyed; a result in another channel marks it
unread (on a phone, the button that opens the channel list too); guests' avatars are not
genbot's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from bot.kernel import PromptsSettings
from tests.adapters.web.browser import user
from tests.genbot.stack import real_stack

pytestmark = pytest.mark.asyncio(loop_scope="session")
TRANSLATE = PromptsSettings(translate="auto", translate_seconds=60)
"""The prompt's translation, a chat call held in the simulator, keeps a command private until
the test lets it through (within a minute)."""


async def test_private_commands_stay_private_and_shown_text_is_safe(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with (
        real_stack(tmp_path) as stack,
        user(chromium_browser, stack.url + "/") as alice,
        user(chromium_browser, stack.url + "/") as bob,
    ):
        await alice.send("/usage")
        answer = alice.page.locator("#messages article.kind-ephemeral", has_text="Your usage")
        await expect(answer.locator(".reply")).to_contain_text("/usage")
        await alice.send("/imagine a fox --mode warp")
        refusal = alice.page.locator("#messages article.kind-ephemeral", has_text="--mode must")
        await expect(refusal.locator(".reply")).to_contain_text("/imagine a fox --mode warp")
        mine = alice.page.locator("#messages article.kind-user", has_text="--mode warp")
        await expect(mine).to_contain_text("Only you can see this")

        await alice.send("/imagine a fox\u202e reversed")
        await expect(alice.page.locator("#messages article.kind-user").last).to_contain_text(
            "a fox\\u202E reversed"
        )
        await alice.send("/settings")
        await alice.page.locator("dialog#modal .btn", has_text="Cancel").click()
        await alice.send("/imagine a lighthouse")
        public = alice.page.locator("#messages article.kind-user", has_text="a lighthouse")
        await expect(public).to_be_visible()
        await expect(public).not_to_have_class(re.compile("grouped"))
        await alice.send("@genbot echo: bell\u0007 ring")
        bobs = bob.page.locator("#messages")
        shown = bobs.locator("article.kind-user", has_text="/imagine a lighthouse")
        await expect(shown).to_have_count(1)
        await expect(shown).not_to_contain_text("Only you can see this")
        await expect(bobs.locator("article.kind-user", has_text="bell")).to_contain_text(
            "bell\\u0007 ring"
        )
        assert await bobs.locator("article", has_text="reversed").count() == 0
        assert await bobs.locator("article", has_text="/usage").count() == 0
        assert await bobs.locator("article", has_text="warp").count() == 0

        await expect(shown.locator(".name")).to_have_text(
            await alice.page.locator("#me-name").inner_text()
        )
        guest = bobs.locator("article.kind-user .avatar.guest").first
        await expect(guest).not_to_have_text("G")
        await expect(bobs.locator("article.kind-bot .avatar.bot").first).to_have_text("")
        assert alice.errors == bob.errors == []


async def test_a_command_shown_to_everyone_late_takes_its_place_before_later_messages(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with (
        real_stack(tmp_path, prompts=TRANSLATE) as stack,
        user(chromium_browser, stack.url + "/") as alice,
        user(chromium_browser, stack.url + "/") as bob,
    ):
        release = stack.sim.state.hold("/v1/chat/completions")
        try:
            await alice.send("/imagine 夕暮れの灯台")
            await expect(alice.page.locator("#messages article.kind-user")).to_contain_text(
                ["Only you can see this"]
            )
            await alice.send("and then a harbour")
            bobs = bob.page.locator("#messages article.kind-user")
            await expect(bobs).to_have_text([re.compile("and then a harbour")])
        finally:
            release.set()
        for shown, reload in ((bob, False), (alice, False), (bob, True), (alice, True)):
            if reload:
                await shown.open(stack.url + "/")
            users = shown.page.locator("#messages article.kind-user")
            await expect(users).to_have_text(
                [re.compile("/imagine 夕暮れの灯台"), re.compile("and then a harbour")]
            )
            await expect(users.first.locator(".name")).to_have_count(1)
            await expect(users.last).to_have_class(re.compile(r"\bgrouped\b"))
        assert alice.errors == bob.errors == []


async def test_a_result_in_another_channel_marks_it_unread(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    # The simulator's clock stands still until alice is in #art: the result comes after.
    manual = real_stack(tmp_path, time_scale=1.0, clock_start=1_700_000_000.0)
    async with (
        manual as stack,
        user(chromium_browser, stack.url + "/", width=400, height=760) as alice,
    ):
        page = alice.page
        toggle = page.locator("#drawer-toggle")
        await alice.send("/imagine a lighthouse")
        await expect(page.locator("article.kind-bot", has_text="lighthouse")).to_be_visible()
        await toggle.click()
        await page.locator("#channel-list a.channel", has_text="art").click()
        await expect(page.locator("#channel-name")).to_have_text("art")
        await expect(page.locator("nav.sidebar")).not_to_be_in_viewport()
        await expect(toggle).not_to_have_class(re.compile("unread"))
        stack.sim.advance(3600)
        await expect(toggle).to_have_class(re.compile(r"\bunread\b.*\bmention\b"), timeout=30_000)
        await toggle.click()
        general = page.locator("#channel-list a.channel", has_text="general")
        await expect(general).to_have_class(re.compile("unread"))
        await expect(general.locator(".badge")).to_be_visible()
        await general.click()
        await expect(general).not_to_have_class(re.compile("unread"))
        await expect(toggle).not_to_have_class(re.compile("unread"))
        assert alice.errors == []
