"""Uploads become attachments of the next command or message; images are served by URL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import ClientSession, FormData

from adapters.web import WebAdapter
from adapters.web.uploads import UploadCache
from bot.kernel import Attachment, Command, ImageFile, OutMessage, Place, UserMessage
from tests.adapters.web.conftest import DOCUMENT_LIMIT, UPLOAD_LIMIT
from tests.adapters.web.fakes import RecordingCore, history, png, post, upload
from tests.resilience.hostile_files import html_gif, truncated_png

PLACE = Place("web", "web", "general", None)


async def upload_ids(browser: ClientSession, *images: bytes) -> list[str]:
    status, answer = await upload(
        browser, *[(f"img{i}.png", data) for i, data in enumerate(images)]
    )
    assert status == 201, answer
    return [item["id"] for item in answer["uploads"]]


async def fetch(browser: ClientSession, url: str) -> tuple[int, bytes, str]:
    async with browser.get(url) as response:
        return response.status, await response.read(), response.content_type


async def test_upload_is_previewable_by_its_owner_only(
    browsers: Callable[[], ClientSession],
) -> None:
    owner, stranger = browsers(), browsers()
    image = png()
    status, answer = await upload(owner, ("../../fox photo.png", image))
    assert status == 201
    [item] = answer["uploads"]
    assert item["filename"] == "fox_photo.png"
    assert (item["size"], item["content_type"]) == (len(image), "image/png")
    assert await fetch(owner, item["url"]) == (200, image, "image/png")
    assert (await fetch(stranger, item["url"]))[0] == 404


async def test_describe_gets_the_upload_as_image_with_bytes_and_a_served_url(
    browser: ClientSession, core: RecordingCore, adapter: WebAdapter
) -> None:
    image = png(12, 10)
    [upload_id] = await upload_ids(browser, image)
    status, _ = await post(
        browser, "/api/command", {"text": "/describe", "attachments": [upload_id]}
    )
    assert status == 202
    [event] = await core.wait_for_events(1)
    assert isinstance(event, Command) and event.name == "describe"
    attachment = event.attachments["image"]
    assert (attachment.data, attachment.size, attachment.content_type) == (
        image,
        len(image),
        "image/png",
    )
    assert attachment.filename == "img0.png"
    assert attachment.url.startswith("http://127.0.0.1:")
    assert await fetch(browser, attachment.url) == (200, image, "image/png")
    [shown] = (await history(browser))["messages"][0]["images"]
    assert attachment.url == adapter.url + shown["url"]


async def test_blend_takes_the_uploads_in_order(
    browser: ClientSession, core: RecordingCore
) -> None:
    images = [png(4, 4, (i * 60, 10, 10)) for i in range(3)]
    ids = await upload_ids(browser, *images)
    body = {"text": "/blend --dimension portrait", "attachments": ids}
    assert (await post(browser, "/api/command", body))[0] == 202
    [event] = await core.wait_for_events(1)
    assert isinstance(event, Command) and event.text == "--dimension portrait"
    assert list(event.attachments) == ["image1", "image2", "image3"]
    assert [a.data for a in event.attachments.values()] == images


@pytest.mark.parametrize(
    ("text", "slot"),
    [
        ("/diffusion img2img a fox in autumn --strength 0.6", "init_image"),
        ("/diffusion controlnet a fox --controlnet canny", "init_image"),
        ("/diffusion upscale --scale 2", "image"),
    ],
)
async def test_diffusion_commands_take_the_first_upload(
    browser: ClientSession, core: RecordingCore, text: str, slot: str
) -> None:
    [upload_id] = await upload_ids(browser, png())
    assert (await post(browser, "/api/command", {"text": text, "attachments": [upload_id]}))[
        0
    ] == 202
    [event] = await core.wait_for_events(1)
    assert isinstance(event, Command) and list(event.attachments) == [slot]


async def test_too_many_images_for_a_command_keeps_the_uploads(
    browser: ClientSession, core: RecordingCore
) -> None:
    first, second = await upload_ids(browser, png(), png(2, 2))
    cases = [
        ("/describe", [first, second], "/describe takes one image; you attached 2."),
        ("/usage", [first], "/usage does not take images; remove the attachment"),
    ]
    for text, ids, error in cases:
        status, answer = await post(browser, "/api/command", {"text": text, "attachments": ids})
        assert status == 400 and error in answer["error"]
    assert (await post(browser, "/api/command", {"text": "/describe", "attachments": [second]}))[
        0
    ] == 202
    [event] = await core.wait_for_events(1)
    assert isinstance(event, Command) and event.attachments["image"].data == png(2, 2)


async def test_message_with_an_image_and_uploads_are_used_once(
    browser: ClientSession, core: RecordingCore
) -> None:
    image = png(6, 6)
    [upload_id] = await upload_ids(browser, image)
    body = {"text": "", "attachments": [upload_id]}
    assert (await post(browser, "/api/message", body))[0] == 202
    [event] = await core.wait_for_events(1)
    assert isinstance(event, UserMessage) and event.text == ""
    [attachment] = event.attachments
    assert attachment.data == image
    status, answer = await post(
        browser, "/api/message", {"text": "again", "attachments": [upload_id]}
    )
    assert status == 400 and "expired or was already sent" in answer["error"]


async def test_oversize_upload_is_refused_with_the_limit(
    browser: ClientSession, adapter: WebAdapter
) -> None:
    too_big = png() + b"\0" * UPLOAD_LIMIT
    status, answer = await upload(browser, ("huge.png", too_big))
    assert status == 400
    assert answer["error"] == "huge.png is too large: images can be at most 4 KiB."
    assert adapter.playground.uploads.count() == 0


async def upload_document(
    browser: ClientSession, filename: str, data: bytes
) -> tuple[int, dict[str, Any]]:
    form = FormData()
    form.add_field("file", data, filename=filename, content_type="text/plain")
    async with browser.post("/api/upload", data=form) as response:
        return response.status, await response.json()


async def test_a_document_is_limited_by_what_chat_reads_not_by_the_image_limit(
    browser: ClientSession, adapter: WebAdapter
) -> None:
    """A text file larger than an image may be is taken up to ``[chat] documents_max_mb`` (what
    chat reads of a document); past it, the refusal names documents and their limit."""
    status, answer = await upload_document(browser, "notes.txt", b"line\n" * (UPLOAD_LIMIT // 4))
    assert status == 201, answer
    [item] = answer["uploads"]
    assert (item["filename"], item["content_type"]) == ("notes.txt", "text/plain")
    status, answer = await upload_document(browser, "big.txt", b"x" * (DOCUMENT_LIMIT + 1))
    assert (status, answer) == (
        400,
        {"error": "big.txt is too large: documents can be at most 8 KiB."},
    )
    assert adapter.playground.uploads.count() == 1


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (
            b"<html><script>alert(1)</script></html>",
            "page.png: the file is not an image genbot can read (PNG, JPEG, GIF or WebP).",
        ),
        (
            html_gif(),
            "page.png: the file is not an image genbot can read (PNG, JPEG, GIF or WebP).",
        ),
        (truncated_png()[:3000], "page.png: the image file is truncated or damaged"),
        (b"", "page.png is empty."),
    ],
)
async def test_non_images_are_refused(
    browser: ClientSession, adapter: WebAdapter, data: bytes, error: str
) -> None:
    status, answer = await upload(browser, ("page.png", data))
    assert status == 400 and answer["error"].startswith(error)
    assert adapter.playground.uploads.count() == 0


async def test_uploads_need_a_multipart_file_field(browser: ClientSession) -> None:
    async with browser.post("/api/upload", json={"file": "x"}) as response:
        assert response.status == 400
        assert "multipart/form-data" in (await response.json())["error"]
    form = FormData()
    form.add_field("picture", png(), filename="a.png")
    async with browser.post("/api/upload", data=form) as response:
        assert response.status == 400
        assert "field named 'file'" in (await response.json())["error"]


async def test_posted_images_are_served_at_stable_urls(
    browser: ClientSession, adapter: WebAdapter
) -> None:
    image = png(16, 16)
    ref = await adapter.surface.send(
        PLACE, OutMessage("grid", images=(ImageFile("grid.png", image),))
    )
    [shown] = (await history(browser))["messages"][0]["images"]
    async with browser.get(shown["url"]) as response:
        assert response.status == 200
        assert await response.read() == image
        assert response.content_type == "image/png"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert "immutable" in response.headers["Cache-Control"]
    await adapter.surface.edit(
        ref, OutMessage("grid, done", images=(ImageFile("grid.png", image),))
    )
    assert (await history(browser))["messages"][0]["images"][0]["url"] == shown["url"]
    other = png(16, 16, (1, 2, 3))
    await adapter.surface.edit(ref, OutMessage("new grid", images=(ImageFile("grid.png", other),)))
    [replaced] = (await history(browser))["messages"][0]["images"]
    assert replaced["url"] != shown["url"]
    assert await fetch(browser, replaced["url"]) == (200, other, "image/png")
    assert (await fetch(browser, shown["url"]))[0] == 404


async def test_image_bytes_that_are_not_an_image_are_not_served_as_one(
    browser: ClientSession, adapter: WebAdapter
) -> None:
    html = b"<html><script>alert(1)</script></html>"
    await adapter.surface.send(
        PLACE, OutMessage("x", images=(ImageFile("x.png", html, "text/html"),))
    )
    [shown] = (await history(browser))["messages"][0]["images"]
    assert await fetch(browser, shown["url"]) == (200, html, "application/octet-stream")


async def test_download_returns_the_bytes_the_playground_holds(
    browser: ClientSession, adapter: WebAdapter, core: RecordingCore
) -> None:
    image = png(3, 3)
    [upload_id] = await upload_ids(browser, image)
    await post(browser, "/api/command", {"text": "/describe", "attachments": [upload_id]})
    [event] = await core.wait_for_events(1)
    assert isinstance(event, Command)
    held = event.attachments["image"]
    assert await adapter.surface.download(held) == image
    by_url = Attachment(filename=held.filename, url=held.url)
    assert await adapter.surface.download(by_url) == image


def test_a_forget_learnt_of_late_drops_only_the_files_kept_before_it() -> None:
    now = [100.0]
    cache = UploadCache(1024, clock=lambda: now[0])
    before, _ = cache.add("web-ann", "fox.png", b"fox", "image/png")
    cache.add("web-bob", "owl.png", b"owl", "image/png")
    now[0] = 200.0
    after, _ = cache.add("web-ann", "hare.png", b"hare", "image/png")

    assert cache.owners() == {"web-ann", "web-bob"}
    assert cache.forget("web-ann", kept_before=150.0) == 1
    assert cache.get(before, "web-ann") is None and cache.get(after, "web-ann") is not None
    assert cache.owned_by("web-bob") == 1
