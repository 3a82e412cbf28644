"""``/forget-me`` in the playground, on the real core and the simulator: a user who chatted in
their DM (a grid drawn by the chat's tool), set their defaults and made a job in a channel sees
what genbot keeps about them, privately, and after pressing "Delete all of it" no table of the
database names them, their messages and images are gone from the playground (as many as the
preview named), so are the files it held for them (an upload not sent yet, a ``/jobs export``
zip to download), and another user's stay."""

from __future__ import annotations

import asyncio
from pathlib import Path

from storage import Job, Store
from tests.adapters.web.fakes import png, upload
from tests.genbot.stack import playground_user, real_stack
from tests.storage.helpers import rows_naming

FILES = "Playground files held for you (uploads not sent yet, exports to download)"


async def posted(store: Store, prompt: str) -> Job:
    async with asyncio.timeout(20):
        while True:
            jobs = await store.db.fetch_all(
                "SELECT id FROM jobs WHERE prompt = ? AND status = 'posted'", (prompt,)
            )
            if jobs:
                job = await store.jobs.get_job(str(jobs[0]["id"]))
                assert job is not None
                return job
            await asyncio.sleep(0.05)


def counts(text: str) -> dict[str, int]:
    """The kinds a /forget-me message lists (``- label: count``), by label."""
    lines = [line[2:].rsplit(": ", 1) for line in text.splitlines() if line.startswith("- ")]
    return {label: int(count) for label, count in lines if count.isdigit()}


async def test_forget_me_counts_then_deletes_every_row_naming_the_user(tmp_path: Path) -> None:
    async with (
        real_stack(tmp_path) as stack,
        playground_user(stack.url) as user,
        playground_user(stack.url) as other,
    ):
        store = stack.runtime.store
        dm = await user.dm_channel()
        in_dm, general = await user.watch(dm), await user.watch()
        asked = await user.message("draw a lighthouse at dusk", channel=dm)
        await in_dm.until(lambda: in_dm.handled(asked), timeout=20)
        grid = await posted(store, "a lighthouse at dusk")
        await user.command("/imagine a red fox")
        await other.command("/imagine an owl")
        set_id = await user.command("/settings --ar 16:9")
        await general.until(lambda: general.handled(set_id))
        await posted(store, "a red fox")
        owl = await posted(store, "an owl")
        me = grid.requester_id
        assert owl.requester_id != me
        assert set(await rows_naming(store, me)) >= {"jobs", "usage", "scope_settings"}

        stored, pictures = await store.playground.about_user(me, dm)
        assert stored and pictures, "the DM's messages and the grid's images are kept"
        status, uploaded = await upload(user.session, ("held.png", png()))
        assert status == 201, uploaded
        held = [item["url"] for item in uploaded["uploads"]]
        exported = await user.command("/jobs export")
        await general.until(lambda: general.handled(exported))
        [zipped] = [m for m in general.after(exported) if m["kind"] == "ephemeral"]
        held.append(zipped["text"].split("Download: ")[1].split(" ")[0].removeprefix(stack.url))
        for path in held:
            async with user.session.get(path) as response:
                assert response.status == 200, path
        asked = await user.command("/forget-me")
        await general.until(lambda: general.handled(asked))
        [preview] = [m for m in general.after(asked) if m["kind"] == "ephemeral"]
        assert preview["private"]
        for line in (
            "Conversations you started: 1",
            "Jobs (prompts, parameters, result links): 2",
            "Personal settings: 1",
            "Days of usage history: 1",
        ):
            assert line in preview["text"]
        shown = counts(preview["text"])
        assert shown["Playground messages"] >= len(stored)
        assert shown["Playground images"] >= len(pictures)
        assert shown[FILES] == 2
        pressed = await user.press(preview, "Delete all of it")
        await general.until(lambda: general.handled(pressed))
        [done] = [m for m in general.after(preview["id"]) if m["kind"] == "ephemeral"]
        assert "Your data on web is deleted" in done["text"]

        went = counts(done["text"])
        assert went["Playground messages"] == shown["Playground messages"] + 1, "and the preview"
        assert went["Playground images"] == shown["Playground images"]
        assert went[FILES] == 2
        for path in held:
            async with user.session.get(path) as response:
                assert response.status == 404, path
        assert await rows_naming(store, me) == {}
        assert await store.playground.about_user(me, dm) == ([], [])
        assert await store.jobs.get_job(owl.id) is not None, "another user's job stays"
        async with user.session.get("/api/history", params={"channel": dm}) as response:
            assert (await response.json())["messages"] == []
        async with other.session.get("/api/history") as response:
            texts = [m["text"] for m in (await response.json())["messages"]]
        assert "/imagine an owl" in texts and "/imagine a red fox" not in texts
