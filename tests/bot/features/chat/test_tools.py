"""Function calling: the model's ``generate_image`` / ``describe_image`` calls run real image
jobs (through the harness's job features) and the final answer is streamed after them."""

from __future__ import annotations

import json
from pathlib import Path

from bot.api import FunctionCall
from bot.features.chat import ChatDefaults
from bot.features.chat.tools import ChatImageTools, ToolContext, run_tool
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

IMAGE_URL = "https://images.example/harbour.png"


async def test_draw_starts_an_image_job_whose_grid_lands_in_the_thread(world: ChatWorld) -> None:
    await world.actor(BOB, CHANNEL).say("draw a lighthouse at dusk", mention=True)
    (thread,) = world.threads()
    job = await world.genbot.latest_job()
    assert (job.type, job.prompt, job.requester_id) == ("imagine", "a lighthouse at dusk", "bob")
    assert job.thread_id == thread.thread_id
    grid = await world.genbot.result(job.id)
    assert grid.ref.place == thread and grid.message.images
    assert [b.label for b in grid.buttons][:5] == ["U1", "U2", "U3", "U4", "🔄"]

    offered, follow_up = world.chat_bodies()
    assert [f["name"] for f in offered["functions"]] == ["generate_image", "describe_image"]
    call, result = follow_up["messages"][-2:]
    assert call == {
        "role": "assistant",
        "content": None,
        "function_call": {
            "name": "generate_image",
            "arguments": json.dumps({"prompt": "a lighthouse at dusk"}),
        },
    }
    assert result["role"] == "function" and result["name"] == "generate_image"
    assert f"Started image job {job.id}" in result["content"]
    finals = [m for m in world.posted_in(thread) if m.message.from_model]
    assert len(finals) == 1 and finals[0].text == await world.replay(follow_up)
    assert finals[0].text.startswith("The function `generate_image` returned:")

    await world.actor(BOB, CHANNEL).say("what was my first message", place=thread)
    assert world.texts_in(thread)[-1] == 'Your first message was: "draw a lighthouse at dusk"'


async def test_draw_on_a_provider_that_calls_tools_and_refuses_the_function_role(
    tmp_path: Path,
) -> None:
    # The variant dialect: calls stream as tool_calls, a function message is refused
    # (docs/provider.md#streamed-function-calls, docs/provider.md#function-results).
    async with chat_world(tmp_path, config=sim_config(dialect="variant")) as world:
        await world.actor().say("draw a lighthouse at dusk")
        job = await world.genbot.latest_job()
        assert (job.type, job.prompt) == ("imagine", "a lighthouse at dusk")
        await world.actor().say("draw a harbour at night")
        statuses = [r.status for r in world.sim.state.requests_to(CHAT_PATH)]
        assert statuses == [200, 400, 200, 200, 200]
        last = world.chat_bodies()[-1]["messages"]
        assert [m["role"] for m in last[-2:]] == ["assistant", "user"]
        assert last[-1]["content"].startswith("[Result of the function generate_image]")
        answers = [m.text for m in world.posted_in(DM) if m.message.from_model]
        assert len(answers) == 2 and all(answers)


async def test_describe_returns_the_four_prompts_to_the_model(world: ChatWorld) -> None:
    await world.actor().say(f"please describe {IMAGE_URL}")
    job = await world.genbot.latest_job()
    assert job.type == "describe" and job.parameters["image_url"] == IMAGE_URL
    described = await world.genbot.result(job.id)
    assert [b.label for b in described.buttons] == ["1", "2", "3", "4", "🔄", "Imagine all", "ℹ️"]
    prompts = (await world.genbot.settled(job.id)).result["prompts"]
    assert len(prompts) == 4
    follow_up = world.chat_bodies()[-1]
    result = follow_up["messages"][-1]
    assert result["name"] == "describe_image"
    for number, prompt in enumerate(prompts, 1):
        assert f"{number}. {prompt}" in result["content"]
    (final,) = [m for m in world.posted_in(DM) if m.message.from_model]
    assert final.text == await world.replay(follow_up)


async def test_a_refused_tool_call_is_explained_by_the_model(tmp_path: Path) -> None:
    async with chat_world(tmp_path, limits={"daily_credit_budget_per_user": 1}) as world:
        await world.store.ledger.add_usage("fake", "alice", credits=5, kind="credits")
        await world.actor().say("paint a stormy sea")
        assert await world.genbot.all_jobs() == []
        result = world.chat_bodies()[-1]["messages"][-1]
        assert result["role"] == "function"
        assert result["content"].startswith("Error: You have used 5 of your 1 credit for today")
        assert "You have used 5 of your 1 credit for today" in world.texts_in(DM)[-1]


async def test_bad_function_calls_become_error_results(world: ChatWorld) -> None:
    tools = ChatImageTools(world.genbot.jobs.chat_jobs)
    context = ToolContext(ALICE, DM, None)
    broken = await run_tool(tools, FunctionCall(name="generate_image", arguments="{oops"), context)
    empty = await run_tool(tools, FunctionCall(name="generate_image", arguments="{}"), context)
    other = await run_tool(tools, FunctionCall(name="launch_rocket", arguments="{}"), context)
    assert broken.startswith("Error: the arguments of generate_image were not a valid JSON")
    assert empty == "Error: generate_image needs a non-empty string argument `prompt`."
    assert other.startswith("Error: there is no function named 'launch_rocket'")
    assert await world.genbot.all_jobs() == []


async def test_rounds_are_bounded(tmp_path: Path) -> None:
    async with chat_world(tmp_path, defaults=ChatDefaults(max_function_rounds=1)) as world:
        await world.actor().say("draw a lighthouse")
        first, last = world.chat_bodies()
        assert "functions" in first and "functions" not in last
        assert len(await world.genbot.all_jobs()) == 1
        assert [m.text for m in world.posted_in(DM) if m.message.from_model] == [
            await world.replay(last)
        ]
    (tmp_path / "none").mkdir()
    async with chat_world(tmp_path / "none", defaults=ChatDefaults(max_function_rounds=0)) as world:
        await world.actor().say("draw a lighthouse")
        (only,) = world.chat_bodies()
        assert "functions" not in only
        assert await world.genbot.all_jobs() == []
