"""Every image genbot reads is checked (bombs, truncated files, other files behind an image's
first bytes), and provider result URLs are fetched within bounds (http(s) only, at most three
redirects, no private addresses unless the provider lives on one)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from bot.kernel import (
    MAX_REDIRECTS,
    MediaError,
    MediaFetcher,
    PublicResolver,
    UnreadableImage,
    inspect_image,
    provider_is_private,
)
from simulator.state import SimulatorConfig
from simulator.task_model import fetch_record
from tests.adapters.web.fakes import png
from tests.bot.harness import harness
from tests.resilience.hostile_files import (
    bomb_png,
    damaged_jpeg,
    html_gif,
    noise_png,
    truncated_png,
)

HOSTILE = [
    ("bomb", bomb_png(), "decompression bomb: it has too many pixels"),
    ("wide", png(9000, 5000), "9000×5000: it has too many pixels"),
    ("truncated", truncated_png(), "truncated or damaged"),
    ("damaged jpeg", damaged_jpeg(), "truncated or damaged"),
    ("html in a gif", html_gif(), "not an image genbot can read"),
    ("svg", b'<svg xmlns="http://www.w3.org/2000/svg"/>', "not an image genbot can read"),
    ("bmp", b"BM" + b"\0" * 60, "not an image genbot can read"),
    ("empty", b"", "empty"),
]


@pytest.mark.parametrize(("data", "words"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
def test_hostile_images_are_refused_with_what_is_wrong(data: bytes, words: str) -> None:
    with pytest.raises(UnreadableImage, match=words):
        inspect_image(data)


def test_readable_images_pass() -> None:
    image = inspect_image(noise_png(40, 30))
    assert (image.width, image.height, image.content_type) == (40, 30, "image/png")


@asynccontextmanager
async def image_server() -> AsyncIterator[tuple[str, list[str]]]:
    """Serves ``/hop/<n>`` (redirects n more times, then the image), ``/bomb`` (also as
    ``/<area>/bomb.png``, where the simulator's record of a task with image id ``bomb`` points),
    ``/to/<url>``."""
    seen: list[str] = []

    async def hop(request: web.Request) -> web.StreamResponse:
        seen.append(request.path)
        left = int(request.match_info["n"])
        if left == 0:
            return web.Response(body=png(20, 20), content_type="image/png")
        return web.Response(status=302, headers={"Location": f"/hop/{left - 1}"})

    async def bomb(request: web.Request) -> web.Response:
        seen.append(request.path)
        return web.Response(body=bomb_png(), content_type="image/png")

    async def to(request: web.Request) -> web.Response:
        seen.append(request.path)
        return web.Response(status=307, headers={"Location": request.query["url"]})

    app = web.Application()
    app.router.add_get("/hop/{n}", hop)
    app.router.add_get("/bomb", bomb)
    app.router.add_get("/{area}/bomb.png", bomb)
    app.router.add_get("/to", to)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", seen
    finally:
        await runner.cleanup()


async def test_at_most_three_redirects_are_followed() -> None:
    fetcher = MediaFetcher(1 << 20, allow_private=True)
    async with image_server() as (url, seen):
        image = await fetcher.fetch(f"{url}/hop/{MAX_REDIRECTS}")
        assert (image.width, image.height) == (20, 20)
        seen.clear()
        with pytest.raises(MediaError, match="redirected more than 3 times"):
            await fetcher.fetch(f"{url}/hop/{MAX_REDIRECTS + 1}")
        assert len(seen) == MAX_REDIRECTS + 1
        for target in ("file:///etc/passwd", "ftp://127.0.0.1/x.png", "gopher://127.0.0.1/"):
            with pytest.raises(MediaError, match="not an http"):
                await fetcher.fetch(f"{url}/to?url={target}")
        with pytest.raises(UnreadableImage, match="decompression bomb"):
            await fetcher.fetch(f"{url}/bomb")
    await fetcher.aclose()


async def test_private_addresses_are_refused_unless_the_provider_is_on_one() -> None:
    assert provider_is_private("http://127.0.0.1:8787")
    assert provider_is_private("http://localhost:8787") and provider_is_private("http://10.1.2.3")
    assert not provider_is_private("https://api.example.com")
    fetcher = MediaFetcher(1 << 20, allow_private=False)
    async with image_server() as (url, seen):
        port = url.rsplit(":", 1)[1]
        for private in (url, f"http://localhost:{port}", f"http://[::1]:{port}", "http://10.0.0.8"):
            with pytest.raises(MediaError, match="private address"):
                await fetcher.fetch(f"{private}/hop/0")
        assert seen == []
    with pytest.raises(OSError, match="private address only"):
        await PublicResolver().resolve("localhost", 80)
    await fetcher.aclose()


async def test_a_bomb_as_a_provider_result_is_posted_as_a_link_after_one_download(
    tmp_path: Path,
) -> None:
    manual = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000, insecure_webhooks=True)
    async with (
        harness(tmp_path, webhooks=True, sim_config=manual) as bot,
        image_server() as (url, seen),
        aiohttp.ClientSession() as http,
    ):
        await bot.actor().command("imagine", prompt="a fox")
        job = await bot.latest_job()
        # The provider's own record points at the bomb (a notification's record is not
        # trusted: genbot posts what multi_fetch answers).
        task = bot.sim.state.tasks[job.provider_id or ""]
        task.base_url, task.image_id = url, "bomb"
        bot.sim.advance(120)
        record = fetch_record(task, bot.sim.state.now())
        hook = f"{bot.settings.webhook.public_url}/webhooks/tasks/{job.id}"
        secret = {"x-webhook-secret": await bot.jobs.starter.webhook_secrets.of(job) or ""}
        async with http.post(hook, data=json.dumps(record), headers=secret) as answer:
            assert answer.status == 200

        posted = await bot.result(job.id)
        bomb = f"{url}/images/bomb.png"
        assert "decompression bomb" in posted.text and bomb in posted.text
        assert posted.message.images == ()
        assert seen == ["/images/bomb.png", "/permanent/bomb.png", "/host/bomb.png"], "each once"
        assert (await bot.settled(job.id)).status == "posted"
