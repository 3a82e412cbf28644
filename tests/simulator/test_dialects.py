"""``--dialect spec``: a provider that knows only what the API documentation states."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import aiohttp
import pytest

from simulator.state import Dialect
from simulator.tasks import webhook_payload
from tests.simulator.conftest import running
from tests.simulator.test_chat_support import FREE_KEY, chat_simulator, post_chat, request
from tests.simulator.test_webhooks import receiver

ROOT = Path(__file__).resolve().parents[2]
CHAT = "/v1/chat/completions"
DRAW = {
    "name": "generate_image",
    "description": "Draw a picture",
    "parameters": {"type": "object", "properties": {"prompt": {"type": "string"}}},
}
DOCUMENTED_GRID_ACTIONS = {
    "reroll",
    *(f"upscale{i}" for i in range(1, 5)),
    *(f"variation{i}" for i in range(1, 5)),
}


async def test_only_first_grids_carry_actions_and_exactly_the_documented_ones() -> None:
    async with running(dialect="spec") as api:
        grid = await api.imagine("a fox --v 6")
        upscale = await api.upscale(grid)
        variation = await api.finished("variation", {"origin_task_id": grid, "index": "2"})
        second = await api.finished("upscale", {"origin_task_id": upscale, "index": "subtle"})

        assert set((await api.fetch(grid))["task_result"]["actions"]) == DOCUMENTED_GRID_ACTIONS
        for derivative in (upscale, variation, second):
            assert (await api.fetch(derivative))["task_result"]["actions"] == []


async def test_the_default_dialect_offers_follow_ups_on_derivatives() -> None:
    async with running() as api:
        grid = await api.imagine("a fox --v 6")
        upscale = await api.upscale(grid)
        assert "outpaint_2" in (await api.fetch(upscale))["task_result"]["actions"]


async def test_chat_rpm_answers_429_with_retry_after_until_the_minute_passes() -> None:
    async with chat_simulator(chat_rpm=2, time_scale=1.0) as sim:
        first = await post_chat(sim, request("hi"))
        second = await post_chat(sim, request("hi"))
        sim.advance(20)
        limited = await post_chat(sim, request("hi"))
        assert (first.status, second.status, limited.status) == (200, 200, 429)
        assert limited.headers["Retry-After"] == "40"
        assert limited.body["error"]["code"] == "rate_limit_exceeded"
        sim.advance(40)
        assert (await post_chat(sim, request("hi"))).status == 200


async def test_chat_rpm_counts_only_answered_requests() -> None:
    async with chat_simulator(chat_rpm=1, time_scale=1.0, context_tokens=50) as sim:
        plan = await post_chat(sim, request("hi", model="llm-4"), key=FREE_KEY)
        context = await post_chat(sim, request("word " * 100), key=FREE_KEY)
        answered = await post_chat(sim, request("hi"), key=FREE_KEY)
        limited = await post_chat(sim, request("hi"), key=FREE_KEY)
        assert (plan.status, context.status) == (403, 400)
        assert (answered.status, limited.status) == (200, 429)


@pytest.mark.parametrize(("dialect", "status"), [("default", 403), ("spec", 401)])
async def test_the_plan_refusal_status_depends_on_the_dialect(
    dialect: Dialect, status: int
) -> None:
    async with chat_simulator(dialect=dialect) as sim:
        reply = await post_chat(sim, request("hi", model="llm-4"), key=FREE_KEY)
        assert reply.status == status
        assert "Developer plan" in reply.body["error"]["message"]


async def test_spec_webhook_bodies_carry_only_the_task_id_and_status() -> None:
    async with receiver() as hook, running(time_scale=0.01, dialect="spec") as api:
        task_id = await api.create(
            "imagine", {"prompt": "a fox", "webhook_endpoint": hook.url, "webhook_secret": "s"}
        )
        api.sim.advance(100_000)
        async with asyncio.timeout(10):
            await api.sim.webhooks_idle()
        [(headers, body)] = hook.calls
        assert body == {"task_id": task_id, "status": "finished"}
        assert headers["x-webhook-secret"] == "s"


async def test_genbot_sim_takes_the_dialect_and_chat_rpm_options() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "genbot", "sim", "--port", "0", "--time-scale", "0",
        "--dialect", "spec", "--chat-rpm", "1", "--free-api-key", "free-key",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        async with asyncio.timeout(20):
            first = (await process.stdout.readline()).decode()
            match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", first)
            assert match, first
            async with aiohttp.ClientSession(match.group(1)) as session:
                chat = {"model": "llm-4", "messages": [{"role": "user", "content": "hi"}]}
                free = {"Authorization": "Bearer free-key"}
                developer = {"Authorization": "Bearer sim-key"}
                statuses = []
                for headers in (free, developer, developer):
                    async with session.post(CHAT, json=chat, headers=headers) as reply:
                        statuses.append(reply.status)
                assert statuses == [401, 200, 429]
    finally:
        process.terminate()
        await process.wait()


async def test_spec_describe_carries_its_prompts_only_as_lines_of_the_message() -> None:
    async with running(dialect="spec") as api:
        task_id = await api.finished("describe", {"image_url": "https://img.example/a.png"})
        result = (await api.fetch(task_id))["task_result"]
        assert "prompts" not in result
        lines = result["message"].splitlines()
        assert [line[:2] for line in lines] == ["1️", "2️", "3️", "4️"]


@pytest.mark.parametrize(
    ("endpoint", "field", "body"),
    [
        ("outpaint", "zoom_ratio", {}),
        ("pan", "direction", {}),
    ],
)
async def test_spec_refuses_leaving_an_undocumented_default_to_the_provider(
    endpoint: str, field: str, body: dict[str, str]
) -> None:
    async with running(dialect="spec") as api:
        upscale = await api.upscale(await api.imagine("a fox --v 6"))
        message = await api.refused(endpoint, {"origin_task_id": upscale, **body})
        assert f"{field} has no documented default" in message
        urls = ["https://img.example/a.png", "https://img.example/b.png"]
        assert "dimension has no" in await api.refused("blend", {"image_urls": urls})
    async with running() as api:
        upscale = await api.upscale(await api.imagine("a fox --v 6"))
        await api.create(endpoint, {"origin_task_id": upscale, **body})
        await api.create("blend", {"image_urls": urls})


async def test_spec_knows_no_aspect_cap_prompt_length_or_version_list() -> None:
    long_prompt = "a fox " + "x" * 6000
    async with running(dialect="spec") as api:
        wide = await api.imagine("a fox --ar 5:1 --v 7")
        await api.create("imagine", {"prompt": long_prompt})
        upscale = await api.upscale(wide)
        await api.create("upscale", {"origin_task_id": upscale, "index": "subtle"})
        assert (await api.fetch(wide))["meta"]["task_param"]["aspect_ratio"] == "5:1"
    async with running() as api:
        assert "4:1" in await api.refused("imagine", {"prompt": "a fox --ar 5:1"})
        assert "6000" in await api.refused("imagine", {"prompt": long_prompt})
        assert "--v 7" in await api.refused("imagine", {"prompt": "a fox --v 7"})


async def test_spec_chat_caps_no_choices_and_says_stop_for_a_cut_answer() -> None:
    body = request("words: 50", n=11, max_tokens=3, top_p=1.5, logit_bias={"999999": 500})
    async with chat_simulator(dialect="spec") as sim:
        reply = await post_chat(sim, body)
        assert reply.status == 200, reply.body
        assert {c["finish_reason"] for c in reply.body["choices"]} == {"stop"}
        assert len(reply.body["choices"]) == 11
    async with chat_simulator() as sim:
        assert (await post_chat(sim, body)).status == 400
        reply = await post_chat(sim, request("words: 50", max_tokens=3))
        assert reply.body["choices"][0]["finish_reason"] == "length"


async def test_spec_gives_an_absent_diffusion_seed_no_randomness_but_null_is_random() -> None:
    async with running(dialect="spec") as api:
        seeds = []
        for body in ({}, {}, {"seed": None}, {"seed": None}):
            status, answer = await api.post("/diff/txt2img", {"prompt": "a fox", **body})
            assert status == 200, answer
            seeds.append(answer["meta"]["seed"])
        assert seeds[:2] == [0, 0] and seeds[2] != seeds[3]


async def test_variant_streams_events_as_single_lines_and_calls_tools() -> None:
    body = request("draw a lighthouse", stream=True, functions=[DRAW], function_call="auto")
    async with chat_simulator(dialect="variant") as sim:
        reply = await post_chat(sim, body)
        assert b"\n\n" not in reply.raw
        lines = reply.raw.decode().splitlines()
        assert lines[-1] == "data: [DONE]" and all(line.startswith("data: ") for line in lines)
        chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
        calls = [c["choices"][0]["delta"].get("tool_calls") for c in chunks]
        assert calls[0][0]["function"]["name"] == "generate_image"
        arguments = "".join(call[0]["function"]["arguments"] for call in calls if call)
        assert json.loads(arguments) == {"prompt": "a lighthouse"}
        assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
        whole = await post_chat(sim, {**body, "stream": False})
        [call] = whole.body["choices"][0]["message"]["tool_calls"]
        assert call["type"] == "function" and call["function"]["name"] == "generate_image"


async def test_variant_refuses_the_function_role_and_data_urls() -> None:
    result = {"role": "function", "name": "generate_image", "content": "done"}
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    vision = request([{"type": "text", "text": "what?"}, image], model="llm-4-vision-preview")
    async with chat_simulator(dialect="variant") as sim:
        refused = await post_chat(sim, {**request("hi"), "messages": [result]})
        assert refused.status == 400 and refused.body["error"]["param"] == "messages[0].role"
        refused = await post_chat(sim, vision)
        assert refused.status == 400, refused.body
        assert refused.body["error"]["param"] == "messages[0].content[1].image_url.url"
    async with chat_simulator() as sim:
        assert (await post_chat(sim, vision)).status == 200


async def test_variant_refuses_webhook_paths_and_wraps_the_record() -> None:
    async with receiver() as hook, running(time_scale=0.01, dialect="variant") as api:
        assert "path" in await api.refused(
            "imagine", {"prompt": "a fox", "webhook_endpoint": hook.url}
        )
        bare = hook.url.removesuffix("/hook")
        task_id = await api.create("imagine", {"prompt": "a fox", "webhook_endpoint": bare})
        assert task_id
    async with running(time_scale=0.01, dialect="variant") as api:
        grid = await api.imagine("a fox --v 6")
        task = api.sim.state.tasks[grid]
        payload = webhook_payload(task, api.sim.state.now())
        assert payload["data"]["task_id"] == grid and "retry_count" in payload["data"]


async def test_variant_names_upscale_actions_as_buttons_read_and_describes_in_paragraphs() -> None:
    async with running(dialect="variant") as api:
        upscale = await api.upscale(await api.imagine("a fox --v 6 --ar 3:2"))
        actions = (await api.fetch(upscale))["task_result"]["actions"]
        assert {"vary_strong", "zoom_out_2x", "make_square", "pan_left"} <= set(actions)
        described = await api.finished("describe", {"image_url": "https://img.example/a.png"})
        result = (await api.fetch(described))["task_result"]
        assert "prompts" not in result
        assert [p[:3] for p in result["message"].split("\n\n")] == ["1. ", "2. ", "3. ", "4. "]


async def test_variant_takes_controlnet_image_only_and_charges_its_own_prices() -> None:
    body = {
        "model_id": "m", "controlnet_model": "canny", "prompt": "a fox",
        "init_image": "https://img.example/a.png",
    }  # fmt: skip
    async with running(dialect="variant") as api:
        status, answer = await api.post(
            "/diff/controlnet", {**body, "control_image": "https://img.example/c.png"}
        )
        assert status == 400 and "controlnet_image" in answer["error"]["message"]
        status, answer = await api.post(
            "/diff/controlnet", {**body, "controlnet_image": "https://img.example/c.png"}
        )
        assert status == 200 and answer["meta"]["control_image"] == "https://img.example/c.png"
        await api.post("/diff/txt2img", {"prompt": "a fox"})
        assert api.sim.state.accounts["sim-key"].charged == 5 + 3


async def test_fast_hours_used_up_run_fast_jobs_as_relax() -> None:
    async with running(fast_hours=0) as api:
        grid = await api.imagine("a fox", process_mode="fast")
        assert (await api.fetch(grid))["meta"]["process_mode"] == "relax"
        assert api.sim.state.tasks[grid].price == 4
    async with running() as api:
        grid = await api.imagine("a fox", process_mode="turbo")
        assert (await api.fetch(grid))["meta"]["process_mode"] == "fast", "the account's setting"
        assert api.sim.state.tasks[grid].mode == "turbo"


async def test_a_suspended_key_may_create_nothing() -> None:
    async with running(suspended_api_key="frozen") as api:
        status, answer = await api.post("/gen/v2/imagine", {"prompt": "a fox"}, key="frozen")
        assert status == 403 and "suspended" in answer["error"]["message"]
        status, answer = await api.post("/diff/txt2img", {"prompt": "a fox"}, key="frozen")
        assert status == 403
