"""The playground's gallery (issue 28 item 4) in Chromium, on the real core and the simulator:
the sidebar opens it on the user's results; a word of a prompt finds one; the viewer shows it;
Download saves its image; Use as init opens genbot's img2img form and starts img2img from that
image in the channel the gallery was opened from. Another user sees none of it, and an image
link of someone else's job is refused. Paging (``limit``/``after``) is read from the API.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from PIL import Image
from playwright.async_api import Browser, Locator, expect

from storage import ALL_STATUSES, Job
from tests.adapters.web.browser import WAIT_MS, send, user
from tests.genbot.stack import Stack, real_stack

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def eventually(check: Callable[[], Awaitable[Job | None]]) -> Job:
    """What ``check`` finds, once it finds something (within the browser tests' wait)."""
    async with asyncio.timeout(WAIT_MS / 1000):
        while True:
            found = await check()
            if found is not None:
                return found
            await asyncio.sleep(0.05)


async def _posted(stack: Stack, grid: Locator) -> Job:
    custom_id = await grid.locator('.btn[data-custom-id^="gb:upscale1:"]').get_attribute(
        "data-custom-id"
    )
    assert custom_id is not None
    job_id = custom_id.rsplit(":", 1)[1]
    jobs = stack.runtime.store.jobs

    async def posted() -> Job | None:
        job = await jobs.get_job(job_id)
        return job if job is not None and job.status == "posted" else None

    return await eventually(posted)


async def test_search_view_download_and_use_as_init(
    tmp_path: Path, chromium_browser: Browser
) -> None:
    async with (
        real_stack(tmp_path) as stack,
        user(chromium_browser) as tab,
        user(chromium_browser) as stranger,
    ):
        page = tab.page
        await tab.open(stack.url + "/#art")
        await send(page, "/imagine a lighthouse at dusk")
        await send(page, "/imagine a red fox in the snow")
        grids = tab.with_button("gb:upscale1:")
        await expect(grids).to_have_count(2, timeout=WAIT_MS)
        lighthouse = await _posted(stack, grids.filter(has_text="lighthouse"))
        fox = await _posted(stack, grids.filter(has_text="red fox"))

        await page.click("#gallery-link")
        await expect(page).to_have_url(f"{stack.url}/gallery?from=art")
        tiles = page.locator("#grid .tile")
        await expect(tiles).to_have_count(2)
        assert [await t.get_attribute("data-job") for t in await tiles.all()] == [
            fox.id,
            lighthouse.id,
        ]
        await expect(tiles.locator("img").first).to_have_attribute("loading", "lazy")

        await page.fill("#filters input[name=text]", "FOX")
        await page.press("#filters input[name=text]", "Enter")
        await expect(tiles).to_have_count(1)
        await expect(tiles.first).to_have_attribute("data-job", fox.id)
        await expect(page.locator("#heading")).to_contain_text("“fox”")

        await page.fill("#filters input[name=date]", "someday")
        await page.click("#filters button[type=submit]")
        await expect(page.locator("#gallery-error")).to_contain_text("is not a date")
        await page.fill("#filters input[name=date]", "")
        await page.click("#filters button[type=submit]")
        await expect(tiles).to_have_count(1)

        await tiles.first.locator(".tile-open").click()
        viewer = page.locator("#viewer")
        await expect(viewer).to_be_visible()
        await expect(viewer).to_contain_text("a red fox in the snow")
        await expect(viewer).to_contain_text(f"job {fox.id}")
        assert await page.locator("#viewer-image").evaluate(
            "(img) => img.decode().then(() => img.naturalWidth)"
        )

        async with page.expect_download() as saving:
            await page.click("#viewer-download")
        download = await saving.value
        assert download.suggested_filename == f"imagine-{fox.id}.png"
        saved = await asyncio.to_thread(Path(await download.path()).read_bytes)
        with Image.open(io.BytesIO(saved)) as picture:
            assert picture.width > 256

        await page.click('#viewer-forms button[data-action="diff_init"]')
        form = page.locator("dialog#modal")
        await expect(form).to_be_visible()
        await expect(form.locator("textarea")).to_have_value("a red fox in the snow")
        await form.locator("textarea").fill("a red fox in the snow, watercolour")
        await form.locator("input[name=strength]").fill("0.5")
        await form.locator('button[type="submit"]').click()
        await expect(page).to_have_url(f"{stack.url}/#art")

        async def started() -> Job | None:
            jobs = await stack.runtime.store.tracking.list_unfinished_jobs(ALL_STATUSES)
            return next(
                (j for j in jobs if j.type == "img2img" and j.parent_job_id == fox.id), None
            )

        made = await eventually(started)
        assert (made.family, made.channel_id) == ("diffusion", "art")
        assert made.requester_id == fox.requester_id
        await expect(tab.with_button("gb:diff_reroll:")).to_have_count(1, timeout=WAIT_MS)
        [sent] = stack.sim.state.requests_to("/diff/img2img")
        assert sent.body["init_image"] == fox.result_urls[0]
        assert sent.body["prompt"] == "a red fox in the snow, watercolour"
        assert sent.body["strength"] == 0.5

        first = await page.request.get(f"{stack.url}/api/gallery?from=art&limit=1")
        assert first.ok
        body = await first.json()
        [newest] = body["results"]
        rest = await page.request.get(f"{stack.url}/api/gallery?from=art&after={body['after']}")
        older = [r["id"] for r in (await rest.json())["results"]]
        assert newest["id"] == made.id and older == [fox.id, lighthouse.id]

        await stranger.open(stack.url + "/")
        refused = await stranger.page.request.get(f"{stack.url}/api/gallery/images/{fox.id}")
        assert refused.status == 404
        assert "no record" in (await refused.json())["error"]
        form_refused = await stranger.page.request.post(
            f"{stack.url}/api/gallery/form", data={"job_id": fox.id, "action": "diff_init"}
        )
        assert form_refused.status == 404
        await stranger.page.goto(f"{stack.url}/gallery")
        await expect(stranger.page.locator("#heading")).to_contain_text("no results")
        assert tab.errors == [] and stranger.errors == []
