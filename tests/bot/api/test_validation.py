"""Every request rule of the spec is refused on our side, with one error type and a sentence
naming the field and what is allowed, before anything reaches the provider."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from bot.api import (
    BlendRequest,
    ChatMessage,
    ChatRequest,
    ControlNetRequest,
    DescribeRequest,
    DiffusionUpscaleRequest,
    ImagineRequest,
    Img2ImgRequest,
    InpaintRequest,
    InvalidRequest,
    MultiFetchRequest,
    OutpaintRequest,
    PanRequest,
    ProviderClient,
    RerollRequest,
    SeedRequest,
    Txt2ImgRequest,
    UpscaleRequest,
    VariationRequest,
)
from simulator.server import RunningSimulator, serve
from tests.bot.api.support import FAST_RETRY, FREE_KEY, settings_for, sim_config

USER = [ChatMessage(role="user", content="hello")]
USER_MESSAGES = [ChatMessage(role="user", content="hello")]
ORIGIN = "21636369-8b52-4b4a-97b7-50923ceb3ffd"


@dataclass(frozen=True)
class Case:
    name: str
    call: Callable[[ProviderClient], Awaitable[Any]]
    field: str
    sentence: str


def chat(**fields: Any) -> Callable[[ProviderClient], Awaitable[Any]]:
    values: dict[str, Any] = {"model": "llm-3.5-turbo", "messages": USER, **fields}
    return lambda api: api.chat.complete(ChatRequest(**values))


async def stream_all(api: ProviderClient, request: ChatRequest) -> None:
    async with api.chat.stream(request) as stream:
        async for _ in stream:
            pass


CASES = [
    Case("unknown model", chat(model="llm-5"), "model", "model must be one of llm-3.5-turbo"),
    Case(
        "temperature high",
        chat(temperature=2.5),
        "temperature",
        "temperature must be between 0 and 2 (got 2.5)",
    ),
    Case(
        "temperature low",
        chat(temperature=-0.1),
        "temperature",
        "temperature must be between 0 and 2 (got -0.1)",
    ),
    Case("top_p", chat(top_p=1.5), "top_p", "top_p must be between 0 and 1 (got 1.5)"),
    Case(
        "presence_penalty",
        chat(presence_penalty=2.1),
        "presence_penalty",
        "presence_penalty must be between -2 and 2 (got 2.1)",
    ),
    Case(
        "frequency_penalty",
        chat(frequency_penalty=-3),
        "frequency_penalty",
        "frequency_penalty must be between -2 and 2 (got -3)",
    ),
    Case(
        "five stop sequences",
        chat(stop=["a", "b", "c", "d", "e"]),
        "stop",
        "stop may hold at most 4 sequences (got 5)",
    ),
    Case("n zero", chat(n=0), "n", "n must be at least 1 (got 0)"),
    Case(
        "function without a description",
        chat(functions=[{"name": "generate_image", "parameters": {"type": "object"}}]),
        "functions[0].description",
        "functions[0].description is required",
    ),
    Case("max_tokens zero", chat(max_tokens=0), "max_tokens", "max_tokens must be at least 1"),
    Case("no messages", chat(messages=[]), "messages", "messages must not be empty"),
    Case(
        "bad role",
        chat(messages=[*USER, {"role": "bot", "content": "x"}]),
        "messages[1].role",
        "messages[1].role must be one of system, user, assistant or function (got 'bot')",
    ),
    Case(
        "array content without the vision model",
        chat(messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
        "messages[0].content",
        "messages[0].content may be a list of parts only with llm-4-vision-preview",
    ),
    Case(
        "null content in a user message",
        chat(messages=[ChatMessage(role="user", content=None)]),
        "messages[0].content",
        "may be empty only in an assistant message carrying a function call",
    ),
    Case(
        "function_call names an unknown function",
        chat(
            functions=[
                {"name": "generate_image", "description": "Draw", "parameters": {"type": "object"}}
            ],
            function_call={"name": "paint"},
        ),
        "function_call",
        "function_call names 'paint', which is not among the functions offered (generate_image)",
    ),
    Case(
        "streamed request is checked too",
        lambda api: stream_all(
            api, ChatRequest(model="llm-3.5-turbo", messages=USER_MESSAGES, temperature=9)
        ),
        "temperature",
        "temperature must be between 0 and 2 (got 9)",
    ),
    Case(
        "empty prompt",
        lambda api: api.tasks.imagine(ImagineRequest(prompt="  ")),
        "prompt",
        "prompt must not be empty",
    ),
    Case(
        "unknown process_mode",
        lambda api: api.tasks.imagine(ImagineRequest(prompt="fox", process_mode="slow")),  # type: ignore[arg-type]
        "process_mode",
        "process_mode must be one of relax, mixed, fast or turbo (got 'slow')",
    ),
    Case(
        "process_mode on reroll",
        lambda api: api.tasks.reroll(RerollRequest(origin_task_id=ORIGIN, process_mode="fast")),  # type: ignore[call-arg]
        "process_mode",
        "process_mode is not a field of this request",
    ),
    Case(
        "aspect ratio",
        lambda api: api.tasks.imagine(ImagineRequest(prompt="fox", aspect_ratio="wide")),
        "aspect_ratio",
        "aspect_ratio must look like 16:9 (got 'wide')",
    ),
    Case(
        "webhook over http",
        lambda api: api.tasks.imagine(
            ImagineRequest(prompt="fox", webhook_endpoint="http://hooks.example.com/x")
        ),
        "webhook_endpoint",
        "webhook_endpoint must be an https://domain address on port 443",
    ),
    Case(
        "webhook on port 8443",
        lambda api: api.tasks.imagine(
            ImagineRequest(prompt="fox", webhook_endpoint="https://hooks.example.com:8443/x")
        ),
        "webhook_endpoint",
        "webhook_endpoint must be an https://domain address on port 443",
    ),
    Case(
        "loopback webhook without the opt-in",
        lambda api: api.tasks.imagine(
            ImagineRequest(prompt="fox", webhook_endpoint="http://127.0.0.1:8788/hook")
        ),
        "webhook_endpoint",
        "webhook_endpoint must be an https://domain address on port 443",
    ),
    Case(
        "webhook secret alone",
        lambda api: api.tasks.imagine(ImagineRequest(prompt="fox", webhook_secret="s")),
        "webhook_secret",
        "webhook_secret needs a webhook_endpoint",
    ),
    Case(
        "upscale index",
        lambda api: api.tasks.upscale(UpscaleRequest(origin_task_id=ORIGIN, index="5")),  # type: ignore[arg-type]
        "index",
        "index must be one of 1, 2, 3, 4, 2x, 4x, light, beta, subtle or creative (got '5')",
    ),
    Case(
        "variation index",
        lambda api: api.tasks.variation(VariationRequest(origin_task_id=ORIGIN, index="2x")),  # type: ignore[arg-type]
        "index",
        "index must be one of 1, 2, 3, 4, high_variation or low_variation (got '2x')",
    ),
    Case(
        "zoom above 2",
        lambda api: api.tasks.outpaint(OutpaintRequest(origin_task_id=ORIGIN, zoom_ratio="2.5")),
        "zoom_ratio",
        "zoom_ratio must be 1 (make square), 1.5, 2, or a decimal greater than 1 and at most 2 "
        "(got '2.5')",
    ),
    Case(
        "zoom below 1",
        lambda api: api.tasks.outpaint(OutpaintRequest(origin_task_id=ORIGIN, zoom_ratio=0.5)),  # type: ignore[arg-type]
        "zoom_ratio",
        "(got 0.5)",
    ),
    Case(
        "pan direction",
        lambda api: api.tasks.pan(PanRequest(origin_task_id=ORIGIN, direction="north")),  # type: ignore[arg-type]
        "direction",
        "direction must be one of up, down, left or right (got 'north')",
    ),
    Case(
        "inpaint mask",
        lambda api: api.tasks.inpaint(InpaintRequest(origin_task_id=ORIGIN, mask="not base64!")),
        "mask",
        "mask must be a base64-encoded image",
    ),
    Case(
        "empty origin",
        lambda api: api.tasks.reroll(RerollRequest(origin_task_id="")),
        "origin_task_id",
        "origin_task_id must be a task id (got '')",
    ),
    Case(
        "describe CDN link",
        lambda api: api.tasks.describe(
            DescribeRequest(image_url="https://cdn.discordapp.com/attachments/1/2/a.png")
        ),
        "image_url",
        "image_url must not be a cdn.discordapp.com link",
    ),
    Case(
        "describe non-link",
        lambda api: api.tasks.describe(DescribeRequest(image_url="a.png")),
        "image_url",
        "image_url must be an http or https link (got 'a.png')",
    ),
    Case(
        "blend one image",
        lambda api: api.tasks.blend(BlendRequest(image_urls=["https://e.com/a.png"])),
        "image_urls",
        "image_urls must hold 2 to 5 images (got 1)",
    ),
    Case(
        "blend six images",
        lambda api: api.tasks.blend(
            BlendRequest(image_urls=[f"https://e.com/{i}.png" for i in range(6)])
        ),
        "image_urls",
        "image_urls must hold 2 to 5 images (got 6)",
    ),
    Case(
        "blend dimension",
        lambda api: api.tasks.blend(
            BlendRequest(
                image_urls=["https://e.com/a.png", "https://e.com/b.png"],
                dimension="wide",  # type: ignore[arg-type]
            )
        ),
        "dimension",
        "dimension must be one of square, portrait or landscape (got 'wide')",
    ),
    Case(
        "seed of nothing",
        lambda api: api.tasks.seed(SeedRequest(task_id="")),
        "task_id",
        "task_id must be a task id",
    ),
    Case(
        "fetch of nothing", lambda api: api.tasks.fetch(" "), "task_id", "task_id must be a task id"
    ),
    Case(
        "multi_fetch with an empty id",
        lambda api: api.tasks.multi_fetch(["a", ""]),
        "task_ids[1]",
        "task_ids[1] must be a task id",
    ),
    Case(
        "width",
        lambda api: api.diffusion.txt2img(Txt2ImgRequest(width=2048)),  # type: ignore[arg-type]
        "width",
        "width must be at most 1024 (got 2048)",
    ),
    Case(
        "height",
        lambda api: api.diffusion.txt2img(Txt2ImgRequest(height="0")),
        "height",
        "height must be a whole number of pixels from 1 to 1024 (got '0')",
    ),
    Case(
        "steps",
        lambda api: api.diffusion.txt2img(Txt2ImgRequest(num_inference_steps="30")),
        "num_inference_steps",
        "num_inference_steps must be one of 21, 31, 41, 51 (got '30')",
    ),
    Case(
        "guidance",
        lambda api: api.diffusion.img2img(Img2ImgRequest(guidance_scale=21)),
        "guidance_scale",
        "guidance_scale must be between 1 and 20 (got 21)",
    ),
    Case(
        "img2img strength",
        lambda api: api.diffusion.img2img(Img2ImgRequest(strength=1.5)),
        "strength",
        "strength must be between 0 and 1 (got 1.5)",
    ),
    Case(
        "controlnet conditioning scale",
        lambda api: api.diffusion.controlnet(
            ControlNetRequest(
                model_id="m",
                init_image="https://e.com/a.png",
                controlnet_model="canny",
                controlnet_conditioning_scale=0.5,
            )
        ),
        "controlnet_conditioning_scale",
        "controlnet_conditioning_scale must be between 1 and 20 (got 0.5)",
    ),
    Case(
        "controlnet without model",
        lambda api: api.diffusion.controlnet(
            ControlNetRequest(init_image="https://e.com/a.png", controlnet_model="canny")  # type: ignore[call-arg]
        ),
        "model_id",
        "model_id is required",
    ),
    Case(
        "lora list",
        lambda api: api.diffusion.txt2img(Txt2ImgRequest(lora_model="a,,b")),
        "lora_model",
        "lora_model must be comma-separated model ids (got 'a,,b')",
    ),
    Case(
        "diffusion upscale url",
        lambda api: api.diffusion.upscale(DiffusionUpscaleRequest(url="ftp://e.com/a.png")),
        "url",
        "url must be an http or https link",
    ),
    Case(
        "diffusion fetch id", lambda api: api.diffusion.fetch(-1), "id", "id must not be negative"
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_rule_is_refused_before_sending(
    case: Case, sim: RunningSimulator, api: ProviderClient
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        await case.call(api)
    error = caught.value
    assert error.field == case.field
    assert case.sentence in str(error)
    assert error.user_message == error.message == str(error)
    assert error.allowed
    assert sim.state.requests == []


async def test_llm_4_is_refused_on_the_free_plan_before_sending(sim: RunningSimulator) -> None:
    settings = settings_for(sim.base_url, key=FREE_KEY, plan="free")
    async with ProviderClient(settings, retry=FAST_RETRY) as api:
        request = ChatRequest(model="llm-4", messages=USER_MESSAGES)
        for attempt in (api.chat.complete(request), stream_all(api, request)):
            with pytest.raises(InvalidRequest) as caught:
                await attempt
            assert caught.value.field == "model"
            assert str(caught.value).startswith("model llm-4 needs the Developer plan or above")
            assert "llm-4" not in caught.value.allowed.split(", ")
        assert sim.state.requests == []
        answer = await api.chat.complete(
            ChatRequest(
                model="llm-3.5-turbo", messages=[ChatMessage(role="user", content="echo: ok")]
            )
        )
        assert answer.text == "ok"


async def test_llm_4_is_allowed_on_the_developer_plan(api: ProviderClient) -> None:
    answer = await api.chat.complete(
        ChatRequest(model="llm-4", messages=[ChatMessage(role="user", content="echo: fine")])
    )
    assert answer.text == "fine"
    assert answer.model.startswith("llm-4")


async def test_assignment_is_validated_too() -> None:
    request = Txt2ImgRequest(width=512)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest, match=r"width must be at most 1024 \(got 4096\)"):
        request.width = "4096"


def test_one_multi_fetch_call_holds_at_most_fifty_ids() -> None:
    assert len(MultiFetchRequest(task_ids=[f"t{i}" for i in range(50)]).task_ids) == 50
    with pytest.raises(InvalidRequest, match=r"task_ids must hold 1 to 50 ids \(got 51\)"):
        MultiFetchRequest(task_ids=[f"t{i}" for i in range(51)])


def test_custom_zoom_and_accepted_forms() -> None:
    assert OutpaintRequest(origin_task_id=ORIGIN, zoom_ratio=1.25).zoom_ratio == "1.25"  # type: ignore[arg-type]
    assert OutpaintRequest(origin_task_id=ORIGIN, zoom_ratio=2).zoom_ratio == "2"  # type: ignore[arg-type]
    assert OutpaintRequest(origin_task_id=ORIGIN, zoom_ratio="1").zoom_ratio == "1"
    assert UpscaleRequest(origin_task_id=ORIGIN, index=3).index == "3"  # type: ignore[arg-type]
    assert Txt2ImgRequest(width=1024, num_inference_steps=51).to_body() == {  # type: ignore[arg-type]
        "width": "1024",
        "num_inference_steps": "51",
        "seed": None,
    }


async def test_rules_genbot_keeps_though_the_documentation_does_not_state_them() -> None:
    # docs/provider.md#numeric-rules: the spec dialect takes these; genbot refuses them before
    # sending, with a sentence naming the rule.
    message = [ChatMessage(role="user", content="hi")]
    refused: list[Callable[[], object]] = [
        lambda: ChatRequest(model="llm-3.5-turbo", messages=message, top_p=1.5),
        lambda: ChatRequest(model="llm-3.5-turbo", messages=message, max_tokens=2.5),  # type: ignore[arg-type]
        lambda: Img2ImgRequest(init_image="https://img.example/a.png", strength=1.5),
    ]
    for build in refused:
        with pytest.raises(InvalidRequest):
            build()
    chat = {"model": "llm-3.5-turbo", "messages": [{"role": "user", "content": "hi"}]}
    async with (
        serve(sim_config(dialect="spec")) as sim,
        aiohttp.ClientSession(sim.base_url) as http,
    ):
        key = {"Authorization": "Bearer sim-key"}
        for extra in ({"top_p": 1.5}, {"max_tokens": 2.5}, {"logit_bias": {"x": 500}}):
            async with http.post("/v1/chat/completions", json={**chat, **extra}, headers=key) as r:
                assert r.status == 200, extra
        body = {"url": "https://img.example/a.png", "scale": 8}
        async with http.post("/diff/upscale", json=body, headers={"X-API-KEY": "sim-key"}) as r:
            assert r.status == 200


def test_controlnet_images_are_links() -> None:
    # docs/provider.md#mask-image: mask_image is a link, like init_image and control_image.
    base: dict[str, Any] = {
        "model_id": "sd-1.5",
        "controlnet_model": "canny",
        "init_image": "https://img.example/a.png",
    }
    for field in ("control_image", "mask_image"):
        with pytest.raises(InvalidRequest, match=field):
            ControlNetRequest(**{**base, field: "data:image/png;base64,iVBORw0KGgo="})
        linked = ControlNetRequest(**{**base, field: "https://img.example/m.png"})
        assert linked.to_body()[field] == "https://img.example/m.png"
