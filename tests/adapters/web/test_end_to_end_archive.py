"""The archive in the playground, on the real core and the simulator: ``/jobs`` finds a job by
a word of its prompt (privately, with its thumbnail), ``/show`` posts it again in another
channel with working buttons (U1 on the copy starts the right upscale), and ℹ️ on the upscale
shows its parent chain, privately."""

from __future__ import annotations

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
