"""The export's bounds, against images served over HTTP on 127.0.0.1: at most ``most_jobs``
jobs (the newest; older ones are said to be left out), at most ``most_bytes`` (an image past
them is left out, with its job still in the manifest), and an image that no longer downloads is
left out too — each listed in the manifest and counted in the summary."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from bot.features.archive import ArchiveExport
from bot.features.archive.export import NOT_DOWNLOADED, Export
from bot.kernel import MediaFetcher, speaking
from storage import JobSearch, SqliteStore
from tests.adapters.web.fakes import png
from tests.storage.conftest import ManualClock, new_job
from tests.storage.helpers import create_job

IMAGE = png(64, 64)


@pytest.fixture
async def images() -> AsyncIterator[str]:
    async def image(request: web.Request) -> web.Response:
        if request.match_info["name"] == "gone.png":
            return web.Response(status=404)
        return web.Response(body=IMAGE, content_type="image/png")

    app = web.Application()
    app.router.add_get("/{name}", image)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_the_newest_jobs_within_the_size_and_what_was_left_out(
    tmp_path: Path, images: str
) -> None:
    clock = ManualClock()
    store = await SqliteStore.open(tmp_path / "genbot.db", clock=clock)
    media = MediaFetcher(1024 * 1024, allow_private=True)
    try:
        made = []
        for name in ("oldest", "gone", "second", "newest"):
            job = await create_job(store.admission, new_job(prompt=f"a {name} fox"))
            await store.jobs.transition(
                job.id, "creating", "finished", result_urls=[f"{images}/{name}.png"]
            )
            await store.jobs.transition(job.id, "finished", "posting")
            await store.jobs.transition(job.id, "posting", "posted")
            made.append(job.id)
            clock.advance(60)
        search = JobSearch(platform="discord", requester_id="u1", workspace_id="g1")
        room = 1024 + 2048 * 3 + len(IMAGE) + len(IMAGE) // 2
        export = await ArchiveExport(store.archive, media, most_jobs=3, most_bytes=room).build(
            search
        )
    finally:
        await media.aclose()
        await store.close()

    assert (export.jobs, export.images, export.older) == (3, 1, True)
    with zipfile.ZipFile(io.BytesIO(export.data)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    assert [entry["id"] for entry in manifest["jobs"]] == made[:0:-1], "the newest three"
    assert [bool(entry["files"]) for entry in manifest["jobs"]] == [True, False, False]
    assert manifest["left_out"] == [
        {"id": made[2], "why": "image(s) past the size limit"},
        {"id": made[1], "why": "image(s) that could not be downloaded"},
    ]
    assert manifest["older_jobs_left_out"] is True
    summary = export.summary()
    assert "Only the newest 3 jobs" in summary
    assert "1 image past the size limit; 1 image that could not be downloaded" in summary


@pytest.mark.parametrize("language", ["ja", "zh-Hans"])
def test_the_summary_writes_no_space_after_a_full_width_stop(language: str) -> None:
    export = Export(b"", jobs=3, images=1, left_out=[("j1", NOT_DOWNLOADED)], older=True)
    with speaking(language):
        summary = export.summary()
    assert summary.count("。") >= 3 and "。 " not in summary
