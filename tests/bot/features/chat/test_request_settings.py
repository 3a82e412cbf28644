"""Per-channel chat request settings: streaming off (through proxy_url), top_p, penalties, stop,
and n > 1 with alternatives to continue from."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bot.api import ProviderClient
from bot.features.chat import ChatDefaults
from bot.kernel import User
from simulator.server import serve
from tests.bot.api.support import FAST_RETRY, settings_for
from tests.bot.features.chat.support import (
    ALICE,
    BOB,
    CHANNEL,
    CHAT_PATH,
    DM,
    ChatWorld,
    chat_world,
    sim_config,
)

ROOT = User("root", "Root", is_admin=True)


async def set_channel(world: ChatWorld, **values: object) -> str:
    await world.actor(ROOT, CHANNEL).command("settings", "", scope="channel", **values)
    return world.platform.ephemerals_for("root")[-1]


async def test_a_channel_without_streaming_answers_whole_through_the_proxy(
    tmp_path: Path,
) -> None:
    async with (
        chat_world(tmp_path, tools=False) as world,
        serve(sim_config()) as proxy,
    ):
        client = ProviderClient(
            settings_for(world.sim.base_url, proxy_url=proxy.base_url), retry=FAST_RETRY
        )
        world.engine.api = world.engine.answerer.api = client
        saved = await set_channel(
            world, stream=False, top_p=0.5, presence_penalty=1.5, frequency_penalty=-0.5,
            stop="###|END",
        )  # fmt: skip
        assert saved == (
            "Saved this channel's defaults: streaming → off, top_p → 0.5, presence penalty → "
            "1.5, frequency penalty → -0.5, stop sequences → ### | END."
        )
        await world.actor(ALICE, CHANNEL).say("echo: hello in one piece", mention=True)
        await world.actor(ALICE, DM).say("echo: hello streamed")
        await client.aclose()

        [whole] = [request.body for request in proxy.state.requests_to(CHAT_PATH)]
        assert whole["stream"] is False and whole["top_p"] == 0.5
        assert (whole["presence_penalty"], whole["frequency_penalty"]) == (1.5, -0.5)
        assert whole["stop"] == ["###", "END"]
        [streamed] = world.chat_bodies()
        assert streamed["stream"] is True and "top_p" not in streamed
        [thread] = world.threads()
        [answer] = [m for m in world.posted_in(thread) if "hello in one piece" in m.text]
        assert len(answer.history) == 1, "a whole answer is posted once, never edited"


@asynccontextmanager
async def billing_provider(upstream: str, usage: dict[str, int]) -> AsyncIterator[str]:
    """A provider on 127.0.0.1 that answers chat as ``upstream`` does, with its own ``usage``
    (its tokenizer is not genbot's)."""

    async def handler(request: web.Request) -> web.Response:
        headers = {"Authorization": request.headers["Authorization"]}
        async with (
            aiohttp.ClientSession() as session,
            session.post(upstream + CHAT_PATH, data=await request.read(), headers=headers) as got,
        ):
            answer: dict[str, Any] = await got.json()
        return web.json_response({**answer, "usage": usage}, status=got.status)

    app = web.Application()
    app.router.add_post(CHAT_PATH, handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_a_whole_answer_records_the_tokens_the_provider_counted(tmp_path: Path) -> None:
    usage = {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290}
    async with (
        chat_world(tmp_path, defaults=ChatDefaults(stream=False)) as world,
        billing_provider(world.sim.base_url, usage) as provider,
    ):
        client = ProviderClient(
            settings_for(world.sim.base_url, proxy_url=provider), retry=FAST_RETRY
        )
        world.engine.api = world.engine.answerer.api = client
        await world.actor(ALICE, DM).say("echo: a lighthouse at dusk")
        await world.actor(ALICE, DM).say("draw a fox in the snow")
        await client.aclose()
        totals = await world.store.ledger.usage_for_user("fake", ALICE.id)
    assert len(world.chat_bodies()) == 3, "the answer, the call, the answer after the call"
    assert (totals.tokens_prompt, totals.tokens_completion) == (3 * 1234, 3 * 56)


async def test_the_configured_default_can_turn_streaming_off(tmp_path: Path) -> None:
    async with chat_world(tmp_path, tools=False, defaults=ChatDefaults(stream=False)) as world:
        await world.actor(ALICE, DM).say("echo: all at once")
        assert world.texts_in(DM)[-1] == "all at once"
        assert world.chat_bodies()[-1]["stream"] is False


async def test_request_settings_are_admin_and_channel_only(tmp_path: Path) -> None:
    async with chat_world(tmp_path, tools=False) as world:
        await world.actor(ALICE, CHANNEL).command("settings", top_p=0.3)
        await world.actor(ALICE, CHANNEL).command("settings", scope="channel", n=2)
        refusals = world.platform.ephemerals_for("alice")
        assert refusals[0] == (
            "Only genbot admins set top_p, per channel: `/settings --scope channel --top-p …`."
        )
        assert refusals[1].startswith("Only genbot admins can change this channel's defaults")
        assert await set_channel(world, stop="a|b|c|d|e") == (
            "stop takes at most 4 sequences (got 5)."
        )


async def test_several_answers_are_offered_and_one_can_be_continued_from(
    tmp_path: Path,
) -> None:
    async with chat_world(tmp_path, tools=False) as world:
        await set_channel(world, n=3)
        alice = world.actor(ALICE, CHANNEL)
        await alice.say("tell me about lighthouses", mention=True)
        [thread] = world.threads()
        [offer] = [
            m for m in world.posted_in(thread) if m.buttons and m.buttons[0].label == "Use 1"
        ]
        assert [b.label for b in offer.buttons] == ["Use 1", "Use 2", "Use 3"]
        assert offer.buttons[0].style == "primary"
        assert world.chat_bodies()[-1]["n"] == 3

        shown, posted = offer.text, len(world.posted_in(thread))
        await world.actor(BOB, thread).press(offer, "Use 2")
        assert world.platform.ephemerals_for(BOB.id) == [
            "Only the person this answer is for can use this button."
        ], "a bystander's pick is refused as their 🔁 is"
        assert [b.style for b in offer.buttons] == ["primary", "secondary", "secondary"]
        assert (offer.text, len(world.posted_in(thread))) == (shown, posted)

        await alice.press(offer, "Use 2")
        assert [b.style for b in offer.buttons] == ["secondary", "primary", "secondary"]
        chosen = world.posted_in(thread)[-1].text
        assert chosen.startswith("**Answer 2** — the conversation continues from it")
        await alice.say("and then?", place=thread)
        continued = world.chat_bodies()[-1]["messages"]
        second = chosen.split("\n\n", 1)[1]
        assert continued[-2] == {"role": "assistant", "content": second}
        assert [m["role"] for m in continued].count("assistant") == 1
