"""The fake Discord itself, spoken to with raw HTTP and a raw websocket: the protocol details
the adapter tests rely on (and that a future end-to-end suite will lean on)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDictProxy

from tests.fakes.discord import FakeDiscord


@pytest.fixture
async def http(fake: FakeDiscord) -> AsyncIterator[aiohttp.ClientSession]:
    headers = {"Authorization": f"Bot {fake.token}"}
    async with aiohttp.ClientSession(fake.api_base + "/", headers=headers) as session:
        yield session


@pytest.fixture
async def gateway(fake: FakeDiscord) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
    async with aiohttp.ClientSession() as session, session.ws_connect(fake.gateway_url) as ws:
        hello = await ws.receive_json()
        assert hello["op"] == 10 and hello["d"]["heartbeat_interval"] > 0
        await ws.send_json({"op": 2, "d": {"token": fake.token, "intents": 0, "properties": {}}})
        ready = await ws.receive_json()
        assert (ready["t"], ready["s"]) == ("READY", 1)
        assert ready["d"]["application"]["id"] == str(fake.app_id)
        guild = await ws.receive_json()
        assert guild["t"] == "GUILD_CREATE" and guild["d"]["unavailable"] is False
        yield ws


async def post(
    http: aiohttp.ClientSession, path: str, body: Any, query: str = ""
) -> tuple[int, Any, CIMultiDictProxy[str]]:
    async with http.post(path.lstrip("/") + query, json=body) as response:
        return response.status, await response.json(content_type=None), response.headers


async def test_answers_are_exact_json_and_unknown_routes_404(
    fake: FakeDiscord, http: aiohttp.ClientSession
) -> None:
    async with http.get("users/@me") as response:
        assert response.headers["Content-Type"] == "application/json"
        assert (await response.json())["id"] == str(fake.bot.id)
    async with http.get("no/such/route") as response:
        assert response.status == 404 and "no/such/route" in (await response.json())["message"]
    async with (
        aiohttp.ClientSession() as anonymous,
        anonymous.get(fake.api_base + "/users/@me") as response,
    ):
        assert response.status == 401


async def test_heartbeats_are_acknowledged_and_a_bad_token_is_closed(
    fake: FakeDiscord, gateway: aiohttp.ClientWebSocketResponse
) -> None:
    await gateway.send_json({"op": 1, "d": 2})
    assert (await gateway.receive_json())["op"] == 11
    async with aiohttp.ClientSession() as session, session.ws_connect(fake.gateway_url) as ws:
        await ws.receive_json()
        await ws.send_json({"op": 2, "d": {"token": "wrong"}})
        await ws.receive()
        assert ws.close_code == 4004


async def test_messages_validate_like_discord(
    fake: FakeDiscord, http: aiohttp.ClientSession
) -> None:
    channel = f"/channels/{fake.channel('general').id}/messages"
    status, body, _ = await post(http, channel, {"content": "x" * 2001})
    assert (status, body["code"]) == (400, 50035)
    status, body, _ = await post(http, channel, {"content": ""})
    assert (status, body["code"]) == (400, 50006)
    twice = {"type": 2, "style": 2, "label": "A", "custom_id": "same"}
    status, body, _ = await post(
        http, channel, {"content": "x", "components": [{"type": 1, "components": [twice, twice]}]}
    )
    assert status == 400
    status, body, _ = await post(http, "/channels/1/messages", {"content": "x"})
    assert (status, body["code"]) == (404, 10003)


async def test_uploads_are_stored_and_served_from_the_cdn(
    fake: FakeDiscord, http: aiohttp.ClientSession
) -> None:
    form = aiohttp.FormData(quote_fields=False)
    payload = {"content": "grid", "attachments": [{"id": 0, "filename": "grid.png"}]}
    form.add_field("payload_json", json.dumps(payload), content_type="application/json")
    form.add_field("files[0]", b"PNGDATA", filename="grid.png", content_type="image/png")
    async with http.post(f"channels/{fake.channel('general').id}/messages", data=form) as response:
        message = await response.json()
    url = message["attachments"][0]["url"]
    assert url.startswith(fake.base_url + "/cdn/")
    async with http.get(url) as response:
        assert await response.read() == b"PNGDATA"
    assert fake.requests[-1].files == [("files[0]", "grid.png", b"PNGDATA")]


async def test_the_bucket_answers_429_with_the_headers_discord_py_reads(
    fake: FakeDiscord, http: aiohttp.ClientSession
) -> None:
    fake.bucket_size, fake.bucket_window = 2, 30.0
    channel = f"/channels/{fake.channel('general').id}/messages"
    _, _, first = await post(http, channel, {"content": "1"})
    assert (first["X-RateLimit-Limit"], first["X-RateLimit-Remaining"]) == ("2", "1")
    assert 0 < float(first["X-RateLimit-Reset-After"]) <= 30
    await post(http, channel, {"content": "2"})
    status, body, headers = await post(http, channel, {"content": "3"})
    assert status == 429 and 0 < body["retry_after"] <= 30 and headers["Via"]
    assert fake.rate_limit_hits == 1
    status, _, _ = await post(
        http, f"/channels/{fake.channel('random').id}/messages", {"content": "4"}
    )
    assert status == 200


@pytest.mark.parametrize("fake", [{"interaction_deadline": 0.0}], indirect=True)
async def test_late_interaction_answers_are_unknown(
    fake: FakeDiscord, http: aiohttp.ClientSession, gateway: aiohttp.ClientWebSocketResponse
) -> None:
    fake.guild_commands[fake.guild_id] = [{"id": "1", "name": "help", "options": []}]
    interaction = await fake.slash(fake.user("alice"), fake.channel("general"), "help")
    dispatched = await gateway.receive_json()
    assert dispatched["t"] == "INTERACTION_CREATE" and dispatched["d"]["data"]["name"] == "help"
    path = f"/interactions/{interaction.id}/{interaction.token}/callback"
    status, body, _ = await post(http, path, {"type": 5})
    assert (status, body["code"], interaction.late_callbacks) == (404, 10062, 1)


async def test_interactions_are_answered_once_then_continued_by_webhook(
    fake: FakeDiscord, http: aiohttp.ClientSession, gateway: aiohttp.ClientWebSocketResponse
) -> None:
    fake.guild_commands[fake.guild_id] = [{"id": "1", "name": "help", "options": []}]
    interaction = await fake.slash(fake.user("alice"), fake.channel("general"), "help")
    hook = f"/webhooks/{fake.app_id}/{interaction.token}"
    status, _, _ = await post(http, hook, {"content": "too early"})
    assert status == 404
    path = f"/interactions/{interaction.id}/{interaction.token}/callback"
    status, answer, _ = await post(
        http, path, {"type": 5, "data": {"flags": 64}}, "?with_response=1"
    )
    assert status == 200 and answer["resource"]["type"] == 5
    assert answer["interaction"]["response_message_loading"] is True
    status, body, _ = await post(http, path, {"type": 4, "data": {"content": "again"}})
    assert (status, body["code"]) == (400, 40060)
    status, first, _ = await post(http, hook, {"content": "done"})
    assert first["id"] == str(interaction.original_message_id) and first["flags"] & 64
    status, second, _ = await post(http, hook, {"content": "more", "flags": 64})
    assert int(second["id"]) in interaction.followup_ids
    async with http.delete(
        f"webhooks/{fake.app_id}/{interaction.token}/messages/@original"
    ) as response:
        assert response.status == 204
    assert [m.content for m in fake.ephemerals_for(fake.user("alice"))] == ["more"]


async def test_threads_are_created_and_announced(
    fake: FakeDiscord, http: aiohttp.ClientSession, gateway: aiohttp.ClientWebSocketResponse
) -> None:
    general = fake.channel("general")
    status, thread, _ = await post(
        http, f"/channels/{general.id}/threads", {"name": "loose", "type": 11}
    )
    assert status == 201 and thread["parent_id"] == str(general.id)
    event = await gateway.receive_json()
    assert event["t"] == "THREAD_CREATE" and event["d"]["id"] == thread["id"]
    status, body, _ = await post(http, f"/channels/{thread['id']}/threads", {"name": "nested"})
    assert (status, body["code"]) == (400, 50024)
    status, dm, _ = await post(
        http, "/users/@me/channels", {"recipient_id": str(fake.user("bob").id)}
    )
    assert dm["type"] == 1 and dm["id"] == str(fake.dm_channel(fake.user("bob")).id)


async def test_channel_history_lists_newest_first(
    fake: FakeDiscord, http: aiohttp.ClientSession
) -> None:
    channel = f"/channels/{fake.channel('random').id}/messages"
    for text in ("one", "two", "three"):
        await post(http, channel, {"content": text})
    async with http.get(channel.lstrip("/") + "?limit=2") as response:
        assert [m["content"] for m in await response.json()] == ["three", "two"]


async def test_a_command_sync_is_refused_for_names_discord_does_not_take(
    http: aiohttp.ClientSession, fake: FakeDiscord
) -> None:
    path = f"applications/{fake.app_id}/commands"
    good: dict[str, Any] = {
        "name": "imagine",
        "description": "Create images",
        "name_localizations": {"de": "bild", "ja": "画像生成"},
        "description_localizations": {"de": "Bilder erstellen"},
        "options": [
            {
                "type": 3,
                "name": "prompt",
                "description": "What to draw",
                "name_localizations": {"de": "beschreibung"},
                "choices": [{"name": "a", "value": "a", "name_localizations": {"de": "b"}}],
            }
        ],
    }
    async with http.put(path, json=[good]) as answer:
        assert answer.status == 200
    spaced = {**good, "name_localizations": {"de": "Bild erstellen"}}
    unknown = {**good, "name_localizations": {"xx": "bild"}}
    twice = {
        **good,
        "options": [
            {"type": 3, "name": "a", "description": "x", "name_localizations": {"de": "c"}},
            {"type": 3, "name": "b", "description": "x", "name_localizations": {"de": "c"}},
        ],
    }
    for refused in (spaced, unknown, twice):
        async with http.put(path, json=[refused]) as answer:
            assert answer.status == 400
            assert (await answer.json())["code"] == 50035
