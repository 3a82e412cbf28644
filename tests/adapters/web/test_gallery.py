"""The gallery's API on the real core: whose results it shows (a user's own; an admin's
workspace search leaves out DMs, as ``/jobs`` does), thumbnails, and what it refuses — a
workspace search by a non-admin, describe results, a page after a job the user may not see, and
an image of a job they may not see — and that whatever a request gives, the answer is a result or
a 400 saying why, never a 500. The Chromium test (test_browser_gallery.py) drives the page.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from PIL import Image

from storage import ALL_STATUSES, Job
from tests.genbot.stack import (
    ChannelView,
    Message,
    PlaygroundUser,
    Stack,
    playground_user,
    real_stack,
)


async def _imagined(
    stack: Stack, user: PlaygroundUser, prompt: str, channel: str
) -> tuple[Job, Message, ChannelView]:
    view = await user.watch(channel)
    shown = await user.post("/api/command", {"text": f"/imagine {prompt}", "channel": channel})
    grid = await view.until(lambda: view.with_buttons(shown, "U1"))
    jobs = await stack.runtime.store.tracking.list_unfinished_jobs(ALL_STATUSES)
    [job] = [j for j in jobs if j.prompt == prompt]
    return job, grid, view


async def _get(user: PlaygroundUser, path: str, status: int) -> Any:
    async with user.session.get(path) as response:
        assert response.status == status, await response.text()
        if response.content_type == "application/json":
            return await response.json()
        return await response.read()


async def test_whose_results_thumbnails_and_refusals(tmp_path: Path) -> None:
    async with (
        real_stack(tmp_path, demo=True) as stack,
        playground_user(stack.url) as alice,
        playground_user(stack.url) as admin,
    ):
        admin_url = stack.runtime.web_admin_url
        assert admin_url is not None
        async with admin.session.get(urlsplit(admin_url).path + "?" + urlsplit(admin_url).query):
            pass
        shared, grid, general = await _imagined(stack, alice, "a lighthouse at dusk", "general")
        alice_dm = await alice.dm_channel()
        private, _, _ = await _imagined(stack, alice, "a secret garden", alice_dm)

        mine = await _get(alice, f"/api/gallery?from={alice_dm}", 200)
        assert [r["id"] for r in mine["results"]] == [private.id, shared.id]
        assert mine["results"][1]["channel"] == "general" and mine["results"][0]["channel"] == ""

        theirs = await _get(admin, "/api/gallery", 200)
        assert theirs["results"] == [], "an admin's own results by default"
        everyone = await _get(admin, "/api/gallery?scope=workspace", 200)
        assert [r["id"] for r in everyone["results"]] == [shared.id], "DMs are left out"
        assert everyone["heading"].startswith("The workspace's results")
        thumbnail = await _get(admin, everyone["results"][0]["thumbnail"], 200)
        with Image.open(io.BytesIO(thumbnail)) as small:
            assert small.format == "JPEG" and max(small.size) <= 256
        await _get(admin, f"/api/gallery/images/{private.id}", 404)

        refused = await _get(alice, "/api/gallery?scope=workspace", 400)
        assert "Only genbot admins" in refused["error"]
        assert "describe" in (await _get(alice, "/api/gallery?type=describe", 400))["error"]
        stale = await _get(alice, "/api/gallery?after=AAAAAAAAAAAA", 400)
        assert "page link no longer works" in stale["error"]
        assert "no record" in (await _get(alice, "/api/gallery/images/..%2Fetc", 404))["error"]
        await _get(alice, "/api/gallery?from=dm-someone-else", 400)
        assert mine["results"][0]["forms"] == [{"action": "diff_init", "label": "Use as init"}]
        async with alice.session.post(
            "/api/gallery/form", json={"job_id": shared.id, "action": "upscale1"}
        ) as response:
            assert response.status == 404
            assert (await response.json())["error"] == "The gallery has no such form."

        await alice.press(grid, "U1")
        await general.until(lambda: general.with_buttons(grid["id"], "Vary (Strong)"))
        async with asyncio.timeout(10):
            while True:
                results = (await _get(alice, "/api/gallery", 200))["results"]
                if len(results) == 3:
                    break
                await asyncio.sleep(0.05)
        upscale, _, first = results
        assert first["id"] == shared.id and [f["action"] for f in first["forms"]] == ["diff_init"]
        assert [f["label"] for f in upscale["forms"]] == ["Use as init", "Use as reference"]
        async with alice.session.post(
            "/api/gallery/form", json={"job_id": upscale["id"], "action": "use_reference"}
        ) as response:
            assert response.status == 200
            modal = (await response.json())["modal"]
        values = {"prompt": "a cat in a hat", "role": "style"}
        await alice.post("/api/modal", {"custom_id": modal["custom_id"], "values": values})
        await general.until(lambda: stack.sim.state.requests_to("/gen/v2/imagine")[2:])
        words = stack.sim.state.requests_to("/gen/v2/imagine")[-1].body["prompt"].split()
        assert words[:5] == ["a", "cat", "in", "a", "hat"] and words[5] == "--sref"


async def test_use_as_init_keeps_the_images_aspect_ratio_within_the_size_limits(
    tmp_path: Path,
) -> None:
    """qa D12: Use as init on a 16:9 image asks img2img for a 16:9 size (about the provider's
    default area, sides multiples of 8, at most 1024), not the default 512×512."""
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as alice:
        general = await alice.watch("general")
        shown = await alice.post("/api/command", {"text": "/imagine a harbour --ar 16:9"})
        await general.until(lambda: general.with_buttons(shown, "U1"))
        async with asyncio.timeout(10):
            while not (results := (await _get(alice, "/api/gallery", 200))["results"]):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        [wide] = results
        async with alice.session.post(
            "/api/gallery/form", json={"job_id": wide["id"], "action": "diff_init"}
        ) as response:
            assert response.status == 200, await response.text()
            modal = (await response.json())["modal"]
        values = {"prompt": "the harbour at night", "strength": "0.5"}
        await alice.post("/api/modal", {"custom_id": modal["custom_id"], "values": values})
        await general.until(lambda: stack.sim.state.requests_to("/diff/img2img"))
        [sent] = stack.sim.state.requests_to("/diff/img2img")
        assert (sent.body["width"], sent.body["height"]) == ("680", "384")


async def test_whatever_a_page_request_gives_the_answer_is_results_or_a_400_saying_why(
    tmp_path: Path,
) -> None:
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as alice:
        job, _, _ = await _imagined(stack, alice, "a lighthouse at dusk", "general")

        def found(page: Any) -> list[str]:
            return [result["id"] for result in page["results"]]

        for date in ("9999", "9999-12", "9999-12-31", "0001"):
            assert found(await _get(alice, f"/api/gallery?date={date}", 200)) == [], date
        everything = await _get(alice, "/api/gallery?date=1900-01-01..9999-12-31", 200)
        assert found(everything) == [job.id]
        assert found(await _get(alice, "/api/gallery?limit=" + "0" * 30 + "7", 200)) == [job.id]
        assert found(await _get(alice, "/api/gallery?limit=" + "9" * 4400, 200)) == [job.id]
        assert found(await _get(alice, "/api/gallery?text=%00", 200)) == [job.id]

        refusals = {
            "date=0000": "`0000` is not a date",
            "date=9999-13": "`9999-13` is not a date",
            "after=zzz": "page link no longer works",
            f"after={job.id}X": "page link no longer works",
            "limit=0": "at least one result",
            "limit=%C2%B2": "'limit' must be a whole number",
            "limit=-1": "'limit' must be a whole number",
            "channel=a%00b": "is not a channel",
            "type=frob": "is not a type",
            "from=..%2Fx": "Invalid channel name",
        }
        for query, why in refusals.items():
            refused = await _get(alice, f"/api/gallery?{query}", 400)
            assert why in refused["error"], query
