"""The live event stream: posts, edits, ephemeral replies and modals, in order, to the right
browsers; replay on reconnect; keep-alive; cleanup of streams whose browser left."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import ClientSession

from adapters.web import WebAdapter
from adapters.web.hub import MAX_STREAMS_PER_USER
from adapters.web.messages import MessageStore
from tests.adapters.web.fakes import (
    STREAMED_ANSWER,
    SseEvent,
    SseReader,
    eventually,
    history,
    post,
)

OpenStream = Callable[..., Awaitable[SseReader]]


def working_done(data: dict[str, Any]) -> bool:
    return data["type"] == "working" and not data["active"]


def types(events: list[SseEvent]) -> list[str]:
    return [event.data["type"] for event in events]


async def test_imagine_progress_and_grid_stream_in_order(
    browser: ClientSession, stream: OpenStream, adapter: WebAdapter
) -> None:
    events_stream = await stream(channel="art")
    status, answer = await post(
        browser, "/api/command", {"text": "/imagine a lighthouse", "channel": "art"}
    )
    assert status == 202
    events = await events_stream.until(working_done)
    assert types(events) == [
        "post", "working", "typing", "post", "post", "edit", "edit", "edit", "working",
    ]  # fmt: skip
    seqs = [int(event.id or 0) for event in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert [event.data["seq"] for event in events] == seqs
    echo, shown, bot = (events[i].data["message"] for i in (0, 3, 4))
    assert echo["id"] == answer["event_id"] and echo["kind"] == "user" and echo["private"]
    assert shown["id"] == echo["id"] and not shown["private"], "shown to all as genbot answers"
    assert bot["kind"] == "bot" and bot["reply_to"] == echo["id"]
    assert bot["text"] == "**a lighthouse** — Waiting to start…"
    edits = [event.data["message"] for event in events[5:8]]
    assert {edit["id"] for edit in edits} == {bot["id"]}
    assert [edit["text"] for edit in edits[:2]] == [
        "**a lighthouse** — 25%",
        "**a lighthouse** — 50%",
    ]
    final = edits[2]
    assert final["mention"] == (await history(browser))["me"]["id"]
    [image] = final["images"]
    assert image["url"].startswith("/images/") and image["content_type"] == "image/png"
    assert (image["width"], image["height"]) == (64, 64)
    labels = [[button["label"] for button in row] for row in final["buttons"]]
    assert labels == [["U1", "U2", "U3", "U4", "🔄"], ["V1", "V2", "V3", "V4"]]
    assert final["buttons"][0][0]["custom_id"] == "gb:upscale1:job1"
    assert final["buttons"][0][4]["style"] == "primary"
    assert all(event.data["channel"] == "art" for event in events)


async def test_streamed_reply_updates_one_message_until_complete(
    browser: ClientSession, stream: OpenStream
) -> None:
    events_stream = await stream()
    assert (await post(browser, "/api/message", {"text": "show me code"}))[0] == 202
    events = await events_stream.until(working_done)
    posts = [e.data["message"] for e in events if e.data["type"] == "post"]
    edits = [e.data["message"] for e in events if e.data["type"] == "edit"]
    assert [p["kind"] for p in posts] == ["user", "bot"]
    assert len(edits) >= 3 and {e["id"] for e in edits} == {posts[1]["id"]}
    texts = [e["text"] for e in edits]
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(texts))
    assert texts[-1] == STREAMED_ANSWER and edits[-1]["from_model"] is True
    assert posts[1]["reply_to"] == posts[0]["id"]


async def test_ephemeral_reply_reaches_only_its_session(
    browsers: Callable[[], ClientSession], stream: OpenStream
) -> None:
    asker, onlooker = browsers(), browsers()
    asker_stream, onlooker_stream = await stream(asker), await stream(onlooker)
    assert (await post(asker, "/api/command", {"text": "/help"}))[0] == 202
    seen_by_asker = await asker_stream.until(working_done)
    assert types(seen_by_asker) == ["post", "working", "ephemeral", "working"]
    ephemeral = seen_by_asker[2].data["message"]
    assert ephemeral["kind"] == "ephemeral"
    assert ephemeral["text"] == "genbot can **chat** and **imagine**."
    seen_by_onlooker = await onlooker_stream.until(working_done)
    assert types(seen_by_onlooker) == ["working", "working"], "the command is the asker's"
    assert ephemeral["id"] in [m["id"] for m in (await history(asker))["messages"]]
    assert ephemeral["id"] not in [m["id"] for m in (await history(onlooker))["messages"]]


async def test_modal_reaches_only_its_session(
    browsers: Callable[[], ClientSession], stream: OpenStream
) -> None:
    asker, onlooker = browsers(), browsers()
    asker_stream, onlooker_stream = await stream(asker), await stream(onlooker)
    assert (await post(asker, "/api/command", {"text": "/settings"}))[0] == 202
    seen = await asker_stream.until(working_done)
    assert types(seen) == ["post", "working", "modal", "working"]
    modal = seen[2].data["modal"]
    assert modal["title"] == "Settings"
    assert modal["custom_id"] == "gb:settings:user"
    assert [f["id"] for f in modal["fields"]] == ["prompt", "zoom", "note"]
    assert modal["fields"][0] == {
        "id": "prompt",
        "label": "Prompt",
        "placeholder": "",
        "default": "a lighthouse",
        "required": True,
        "max_length": 200,
        "multiline": True,
        "kind": "text",
        "choices": [],
        "image_url": "",
    }
    assert types(await onlooker_stream.until(working_done)) == ["working", "working"]


async def test_grid_button_upscale_then_custom_zoom_form_round_trip(
    browser: ClientSession, stream: OpenStream
) -> None:
    events_stream = await stream()
    await post(browser, "/api/command", {"text": "/imagine a lighthouse"})
    grid = (await events_stream.until(working_done))[-2].data["message"]
    u1 = grid["buttons"][0][0]
    body = {"message_id": grid["id"], "custom_id": u1["custom_id"]}
    assert (await post(browser, "/api/button", body))[0] == 202
    seen = await events_stream.until(working_done)
    upscale = next(e.data["message"] for e in seen if e.data["type"] == "post")
    assert upscale["reply_to"] == grid["id"] and upscale["text"] == "Image #1"
    zoom = next(b for row in upscale["buttons"] for b in row if b["label"] == "Custom Zoom")
    body = {"message_id": upscale["id"], "custom_id": zoom["custom_id"]}
    assert (await post(browser, "/api/button", body))[0] == 202
    modal = next(
        e.data for e in await events_stream.until(working_done) if e.data["type"] == "modal"
    )
    values = {"prompt": "wider", "zoom": "1.8"}
    submit = {"custom_id": modal["modal"]["custom_id"], "values": values}
    assert (await post(browser, "/api/modal", submit))[0] == 202
    answer = next(
        e.data["message"]
        for e in await events_stream.until(working_done)
        if e.data["type"] == "post"
    )
    assert answer["text"] == "Zooming (prompt=wider, zoom=1.8, note=)"
    assert answer["reply_to"] == upscale["id"]


async def test_reconnecting_stream_replays_what_it_missed(
    browser: ClientSession, stream: OpenStream, adapter: WebAdapter
) -> None:
    first = await stream()
    await post(browser, "/api/command", {"text": "/help"})
    seen = await first.until(working_done)
    after = int(seen[0].id or 0)
    await post(browser, "/api/command", {"text": "/chat again"})
    await asyncio.sleep(0)
    replayed = await stream(after=str(after))
    events = await replayed.until(
        lambda d: d["type"] == "edit" and d["message"]["text"] == STREAMED_ANSWER
    )
    assert int(events[0].id or 0) == after + 1
    assert types(events)[:3] == ["working", "ephemeral", "working"]
    async with browser.get(
        "/api/events",
        params={"channel": "general", "after": "0"},
        headers={"Last-Event-ID": str(after + 2)},
    ) as response:
        reader = SseReader(response)
        assert (await reader.next()).data["type"] == "hello"
        assert int((await reader.next()).id or 0) == after + 3


async def test_hello_names_the_server_instance_so_pages_reload_after_a_restart(
    browser: ClientSession, adapter: WebAdapter
) -> None:
    async with browser.get("/api/events", params={"channel": "general"}) as response:
        hello = (await SseReader(response).next()).data
    assert (
        hello["instance"]
        == (await history(browser))["instance"]
        == adapter.playground.store.instance
    )
    assert MessageStore().instance != adapter.playground.store.instance


async def test_stream_asks_for_a_reload_when_it_cannot_replay(stream: OpenStream) -> None:
    reader = await stream(after="999")
    assert (await reader.next()).data == {"type": "reset", "channel": "general"}


async def test_bad_stream_requests_are_400(browser: ClientSession) -> None:
    async with browser.get("/api/events", params={"channel": "general", "after": "x"}) as response:
        assert response.status == 400
        assert "'after' must be an event number" in (await response.json())["error"]
    async with browser.get("/api/events", params={"channel": "NO!"}) as response:
        assert response.status == 400


async def test_keep_alive_comments_and_cleanup_of_departed_browsers(
    browser: ClientSession, adapter: WebAdapter
) -> None:
    response = await browser.get("/api/events", params={"channel": "lab"})
    reader = SseReader(response)
    assert (await reader.next()).data["type"] == "hello"
    keepalives = 0
    async with asyncio.timeout(5):
        while keepalives < 2:
            line = await response.content.readline()
            keepalives += line.startswith(b": keep-alive\n")
    assert adapter.playground.hub.subscriber_count("lab") == 1
    response.close()
    await eventually(lambda: adapter.playground.hub.subscriber_count("lab") == 0)


async def test_stop_ends_open_streams(adapter: WebAdapter, stream: OpenStream) -> None:
    reader = await stream()
    await adapter.stop()
    async with asyncio.timeout(5):
        while True:
            try:
                await reader.next()
            except (EOFError, ConnectionError):
                break
    assert adapter.playground.hub.subscriber_count() == 0


async def test_one_user_keeps_at_most_sixteen_streams_open(
    browsers: Callable[[], ClientSession], stream: OpenStream, adapter: WebAdapter
) -> None:
    """A 17th event stream of one browser is refused with 429 and a sentence (before: one user
    opened 1,000 and everyone else's page loads got 503); other users still get theirs, and a
    closed stream makes room."""
    mallory, alice = browsers(), browsers()
    opened = [await stream(mallory) for _ in range(MAX_STREAMS_PER_USER)]
    async with mallory.get("/api/events", params={"channel": "general"}) as refused:
        assert refused.status == 429
        assert "live views" in (await refused.json())["error"]
    await stream(alice)
    opened[0].response.close()
    await eventually(lambda: adapter.playground.hub.subscriber_count() == MAX_STREAMS_PER_USER)
    await stream(mallory)
