"""The admin page in Chromium (issue 30's done-when): a ban set there is enforced in Slack, and
the page's audit log shows it and the refusal it caused. One genbot runs the playground and the
Slack adapter (on the fake Slack, through the real slack-bolt) on one database; a second
browser, not an admin, is refused the page. A stored pattern rule RE2 does not run is shown as
inactive, with the reason. The queue counts the jobs made in direct messages and shows nothing
of them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, expect

from adapters.slack import SlackAdapter
from adapters.web.settings import WebSettings
from genbot.runtime import running
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from storage import ModerationRule, SavedOption
from tests.adapters.slack.end_to_end import JOB_TIME_SCALE, WAIT, budgeted_fake, genbot_settings
from tests.adapters.web.browser import WAIT_MS, user
from tests.fakes.slack import FakeSlack
from tests.genbot.stack import playground_user, real_stack

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(loop_scope="session")
async def fake() -> AsyncIterator[FakeSlack]:
    async with budgeted_fake() as slack:
        yield slack


@pytest_asyncio.fixture(loop_scope="session")
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=JOB_TIME_SCALE)) as running_sim:
        yield running_sim


async def test_a_ban_set_on_the_admin_page_is_enforced_in_slack_and_logged(
    tmp_path: Path, chromium_browser: Browser, fake: FakeSlack, sim: RunningSimulator
) -> None:
    settings = genbot_settings(fake, sim, tmp_path / "genbot.db")
    settings = settings.model_copy(update={"web": WebSettings(enabled=True, port=0)})
    async with (
        running(settings, demo=True) as runtime,
        user(chromium_browser) as admin,
        user(chromium_browser) as stranger,
    ):
        slack = runtime.adapters["slack"]
        assert isinstance(slack, SlackAdapter) and slack.events_url is not None
        admin_url = runtime.web_admin_url
        assert admin_url is not None
        stored_before = ModerationRule("old", r"(x)\1", pattern=True)
        assert await runtime.store.moderation.add_rule("slack", fake.team_id, stored_before, "U0")
        page = admin.page
        await page.goto(admin_url)
        await expect(page.locator("#admin-link")).to_be_visible(timeout=WAIT_MS)
        await page.click("#admin-link")
        await expect(page.locator("#sections")).to_be_visible(timeout=WAIT_MS)
        await page.select_option("#platform", "slack")
        await page.fill("#workspace", fake.team_id)
        await page.click("#where button")
        await expect(page).to_have_url(
            f"{runtime.web_url}/admin?platform=slack&workspace={fake.team_id}"
        )
        await expect(page.locator("#sections")).to_be_visible(timeout=WAIT_MS)
        await expect(page.locator("#cluster")).to_contain_text("live")
        await expect(page.locator("#keys tbody tr")).to_contain_text("default")
        await expect(page.locator("#tiers tbody tr")).to_contain_text("default (everyone else)")
        configured = re.compile(r"The configuration adds \d+ rules? everywhere\.")
        await expect(page.locator("#moderation")).to_contain_text(configured)
        inactive = page.locator("#moderation [data-inactive]")
        await expect(inactive).to_contain_text("inactive: genbot runs patterns on RE2")

        await page.fill("#ban-form input[name=entry]", "U1")
        await page.fill("#ban-form input[name=minutes]", "30")
        await page.click("#ban-form button")
        await expect(page.locator("#status")).to_contain_text("genbot has not seen `U1`")
        await runtime.store.preferences.set_option("slack", "U1", SavedOption("neon", "--s 50"))
        await page.click("#ban-form button")
        await expect(page.locator("#status")).to_contain_text("Banned `U1` until")
        await expect(page.locator("#moderation [data-unban=U1]")).to_be_visible()
        await expect(page.locator("#audit tbody tr").first).to_contain_text("moderation.banned")

        command = fake.slash_command("/imagine", "a calm fox", user="U1")
        assert (await fake.post_command(slack.events_url, command)).status == 200
        [refusal] = await fake.wait_for(lambda: fake.ephemerals, WAIT)
        assert refusal.user == "U1" and "no prompts from you until" in refusal.text
        assert sim.state.requests == [], "no provider call"

        await page.fill("#audit-form input[name=user]", "U1")
        await page.click("#audit-form button")
        rows = page.locator("#audit tbody tr")
        await expect(rows).to_have_count(2)
        await expect(rows.nth(0)).to_contain_text("moderation.refused")
        await expect(rows.nth(1)).to_contain_text("moderation.banned")
        await expect(rows.nth(1)).to_contain_text('"minutes":30')

        await stranger.page.goto(runtime.web_url + "/")
        await expect(stranger.page.locator(".connection.live")).to_be_visible(timeout=WAIT_MS)
        await expect(stranger.page.locator("#admin-link")).to_be_hidden()
        await stranger.page.goto(f"{runtime.web_url}/admin?platform=slack&workspace={fake.team_id}")
        await expect(stranger.page.locator("#status")).to_contain_text("Only genbot admins")
        await expect(stranger.page.locator("#sections")).to_be_hidden()
        assert admin.errors == [] and stranger.errors == []


async def test_the_queue_counts_jobs_in_direct_messages_and_shows_nothing_of_them(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with (
        real_stack(tmp_path, demo=True, clock_start=1_700_000_000) as stack,
        playground_user(stack.url) as requester,
        user(chromium_browser) as admin,
    ):
        dm = await requester.dm_channel()
        view = await requester.watch(dm)
        private = {"text": "/imagine my private dm secret prompt", "channel": dm}
        said = await requester.post("/api/command", private)
        await view.until(lambda: view.handled(said))
        admin_url = stack.runtime.web_admin_url
        assert admin_url is not None
        page = admin.page
        await page.goto(admin_url)
        await expect(page.locator("#admin-link")).to_be_visible(timeout=WAIT_MS)
        await page.goto(f"{stack.url}/admin?platform=web&workspace=web")
        await expect(page.locator("#sections")).to_be_visible(timeout=WAIT_MS)
        await expect(page.locator("#queue [data-direct-messages]")).to_have_text(
            "1 job in direct messages is not listed: only its requester may see or cancel it."
        )
        await expect(page.locator("#queue")).to_contain_text("None.")
        await expect(page.locator("#queue")).not_to_contain_text("secret")
        assert admin.errors == []
