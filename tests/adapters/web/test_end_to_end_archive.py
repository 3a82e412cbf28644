"""The archive in the playground, on the real core and the simulator: ``/jobs`` finds a job by
a word of its prompt (privately, with its thumbnail), ``/show`` posts it again in another
channel with working buttons (U1 on the copy starts the right upscale), and ℹ️ on the upscale
shows its parent chain, privately (both naming users and channels as the playground does:
``@guest 3fa2``, ``#random``); ``/jobs export`` answers privately with a link only its user
opens, to a zip whose manifest matches the jobs."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from storage import ALL_STATUSES
from tests.genbot.stack import playground_user, real_stack


async def test_search_show_u1_on_the_copy_and_info_with_the_parent_chain(tmp_path: Path) -> None:
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as user:
        store = stack.runtime.store
        view, random = await user.watch(), await user.watch("random")
        echo_id = await user.command("/imagine a lighthouse at dusk")
        await view.until(lambda: view.with_buttons(echo_id, "U1"))
        [grid] = await store.tracking.list_unfinished_jobs(ALL_STATUSES)

        asked = await user.command("/jobs dusk")
        await view.until(lambda: view.handled(asked))
        [page] = view.after(asked)
        assert page["kind"] == "ephemeral" and page["private"]
        assert grid.id in page["text"] and len(page["images"]) == 1
        assert f" · #general · `{grid.id}`" in page["text"], "the channel by its name"
        assert [[b["label"] for b in row] for row in page["buttons"]] == [["Show 1"]]

        shown = await user.post("/api/command", {"text": f"/show {grid.id}", "channel": "random"})
        copy = await random.until(lambda: random.with_buttons(shown, "U1"))
        assert copy["kind"] == "bot" and copy["images"]
        await user.press(copy, "U1")
        upscale_message = await random.until(
            lambda: random.with_buttons(copy["id"], "Vary (Strong)")
        )
        jobs = await store.tracking.list_unfinished_jobs(ALL_STATUSES)
        [upscale] = [job for job in jobs if job.type == "upscale"]
        assert (upscale.parent_job_id, upscale.channel_id) == (grid.id, "random")

        info_id = await user.press(upscale_message, "ℹ️")
        await random.until(lambda: random.handled(info_id))
        [info] = [m for m in random.after(upscale_message["id"]) if m["kind"] == "ephemeral"]
        assert f"job `{upscale.id}`" in info["text"]
        assert grid.id in info["text"] and "a lighthouse at dusk" in info["text"]
        guest = f"@guest {upscale.requester_id[-4:]}"
        assert f"Asked by {guest} on " in info["text"] and info["text"].endswith(" in #random")
        assert "<@" not in info["text"] + page["text"] and "<#" not in info["text"] + page["text"]


async def test_export_links_a_zip_whose_manifest_matches_the_jobs(tmp_path: Path) -> None:
    async with (
        real_stack(tmp_path) as stack,
        playground_user(stack.url) as user,
        playground_user(stack.url) as other,
    ):
        store = stack.runtime.store
        view = await user.watch()
        for prompt in ("a lighthouse at dusk", "a red fox"):
            imagined = await user.command(f"/imagine {prompt}")
            await view.until(lambda: view.with_buttons(imagined, "U1"))  # noqa: B023
        jobs = await store.tracking.list_unfinished_jobs(ALL_STATUSES)

        asked = await user.command("/jobs export")
        await view.until(lambda: view.handled(asked))
        [answer] = [m for m in view.after(asked) if m["kind"] == "ephemeral"]
        assert answer["private"] and "2 jobs, 2 images" in answer["text"]
        link = answer["text"].split("Download: ")[1].split(" ")[0]
        path = link.removeprefix(stack.url)
        async with other.session.get(path) as refused:
            assert refused.status == 404, "the link is its user's only"
        async with user.session.get(path) as response:
            assert response.status == 200
            assert "attachment" in response.headers["Content-Disposition"]
            data = await response.read()

        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            manifest = json.loads(archive.read("manifest.json"))
            names = set(archive.namelist())
            entries = {entry["id"]: entry for entry in manifest["jobs"]}
            assert set(entries) == {job.id for job in jobs}
            for job in jobs:
                entry = entries[job.id]
                assert entry["prompt"] == job.prompt and entry["type"] == "imagine"
                assert len(entry["files"]) == 1 and set(entry["files"]) <= names
                assert archive.read(entry["files"][0])[:8] == b"\x89PNG\r\n\x1a\n"
            assert manifest["left_out"] == [] and not manifest["older_jobs_left_out"]
            assert names == {"manifest.json", *(f for e in entries.values() for f in e["files"])}

        asked = await user.command("/jobs export windmill")
        await view.until(lambda: view.handled(asked))
        [nothing] = [m for m in view.after(asked) if m["kind"] == "ephemeral"]
        assert "nothing to export" in nothing["text"]
