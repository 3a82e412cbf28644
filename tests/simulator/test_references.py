"""Image references in imagine prompts: read, fetched when the task is created (an unfetchable
one fails the task), counted on the placeholder; ignored by the spec dialect."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web
from PIL import Image

from simulator.images import render_png
from simulator.references import reference_urls
from tests.simulator.conftest import LONG_ENOUGH, Api, running


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


@asynccontextmanager
async def image_server() -> AsyncIterator[tuple[str, list[str]]]:
    """A loopback server: ``/ok.png`` is an image, ``/page`` is HTML, anything else 404; yields
    its address and the paths asked for."""
    asked: list[str] = []

    async def serve(request: web.Request) -> web.Response:
        asked.append(request.path)
        if request.path == "/ok.png":
            return web.Response(body=png(), content_type="image/png")
        if request.path == "/page":
            return web.Response(text="<html></html>", content_type="text/html")
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/{tail:.*}", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}", asked
    finally:
        await runner.cleanup()


def test_references_are_read_from_the_start_and_the_reference_flags() -> None:
    prompt = (
        "https://a.example/1.png https://a.example/2.png a fox https://a.example/in-text.png "
        "--sref https://a.example/s.png::2 1234 --cref https://a.example/c.png --sw 200 --cw 50"
    )
    assert reference_urls(prompt) == (
        "https://a.example/1.png",
        "https://a.example/2.png",
        "https://a.example/s.png",
        "https://a.example/c.png",
    )
    assert reference_urls("a fox --v 6 --sref random") == ()


async def test_each_reference_is_fetched_and_shown_on_the_placeholder(api: Api) -> None:
    async with image_server() as (base, asked):
        prompt = f"{base}/ok.png a fox --sref {base}/ok.png?style --iw 1.5"
        task_id = await api.imagine(prompt)
        assert sorted(asked) == ["/ok.png", "/ok.png"]
    record = await api.fetch(task_id)
    status, grid = await api.download(record["task_result"]["image_url"])
    art = api.sim.state.tasks[task_id]
    without = await api.imagine("a fox --sref 1234 --sw 100")
    plain = await api.fetch(without)
    assert status == 200 and art.art_seed
    spec = api.sim.state.images[art.image_id].spec
    assert [cell.references for cell in spec.cells] == [2, 2, 2, 2]
    assert grid == render_png(spec)
    assert api.sim.state.images[api.sim.state.tasks[without].image_id].spec.cells[0].references == 0
    assert plain["status"] == "finished"


async def test_a_reference_that_cannot_be_fetched_fails_the_task(api: Api) -> None:
    async with image_server() as (base, _):
        for path in ("/missing.png", "/page"):
            task_id = await api.create("imagine", {"prompt": f"{base}{path} a fox"})
            api.sim.advance(LONG_ENOUGH)
            record = await api.fetch(task_id)
            assert record["status"] == "failed", record
            [message] = record["task_result"]["error_messages"]
            assert f"{base}{path}" in message


async def test_a_weight_out_of_range_is_refused(api: Api) -> None:
    message = await api.refused("imagine", {"prompt": "a fox --sref 1 --sw 5000"})
    assert "--sw" in message and "1000" in message


async def test_the_spec_dialect_ignores_references() -> None:
    async with running(dialect="spec") as api, image_server() as (base, asked):
        task_id = await api.imagine(f"{base}/missing.png a fox --sref {base}/missing.png")
        assert asked == []
        art = api.sim.state.images[api.sim.state.tasks[task_id].image_id].spec
        assert art.cells[0].references == 0
