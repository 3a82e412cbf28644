"""Diffusion API: auth, validation, the success/processing rule, fetch, upscale and expiry."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from tests.simulator.conftest import KEY, Api, running

CONTROLNET = {
    "model_id": "realistic-vision",
    "init_image": "https://img.example/pose.png",
    "controlnet_model": "openpose",
}


@pytest.mark.parametrize("kind", ["txt2img", "img2img", "upscale", "controlnet"])
async def test_generation_endpoints_need_a_key(api: Api, kind: str) -> None:
    for key in (None, "wrong"):
        status, answer = await api.post(f"/diff/{kind}", {"prompt": "a fox"}, key=key)
        assert status == 401 and "API key" in answer["error"]["message"]
    assert api.sim.state.diffusion_jobs == {}


async def test_small_txt2img_succeeds_at_once_with_output_urls(api: Api) -> None:
    body = {"prompt": "a red fox", "width": "512", "height": "512", "seed": 7,
            "num_inference_steps": "31", "lora_model": "a,b",
            "negative_prompt": "blur"}  # fmt: skip
    status, answer = await api.post("/diff/txt2img", body)
    assert status == 200
    assert answer["status"] == "success"
    assert isinstance(answer["id"], int) and isinstance(answer["generationTime"], float)
    [url] = answer["output"]
    assert url == f"{api.sim.base_url}/diffusion/diff-{answer['id']}.png"
    meta = answer["meta"]
    assert (meta["prompt"], meta["W"], meta["H"], meta["seed"], meta["steps"]) == (
        "a red fox", 512, 512, 7, 31
    )  # fmt: skip
    assert (meta["lora"], meta["negative_prompt"], meta["model_id"]) == (
        "a,b", "blur", "sim-diffusion-1"
    )  # fmt: skip
    status, data = await api.download(url)
    assert status == 200
    assert Image.open(io.BytesIO(data)).size == (256, 256)


@pytest.mark.parametrize(
    ("size", "steps"), [(("768", "512"), "31"), (("512", "512"), "41"), (("1024", "1024"), "51")]
)
async def test_larger_jobs_answer_processing_then_fetch_returns_the_output(
    api: Api, size: tuple[str, str], steps: str
) -> None:
    body = {"prompt": "a fox", "width": size[0], "height": size[1], "num_inference_steps": steps}
    status, answer = await api.post("/diff/txt2img", body)
    assert status == 200
    assert answer["status"] == "processing"
    assert answer["messege"] == "Try to fetch request after given estimated time"
    assert answer["eta"] > 0 and "output" not in answer
    status, fetched = await api.post("/diff/fetch", {"id": answer["id"]}, key=None)
    assert (status, fetched["status"], fetched["output"]) == (200, "processing", [])
    api.sim.advance(answer["eta"])
    status, fetched = await api.post("/diff/fetch", {"id": answer["id"]}, key=None)
    assert fetched == {
        "id": answer["id"],
        "status": "success",
        "output": [f"{api.sim.base_url}/diffusion/diff-{answer['id']}.png"],
    }
    status, data = await api.download(fetched["output"][0])
    assert status == 200
    width, height = Image.open(io.BytesIO(data)).size
    assert max(width, height) == 256


async def test_img2img_echoes_init_image_and_strength(api: Api) -> None:
    body = {"prompt": "autumn", "init_image": "https://img.example/fox.png", "strength": 0.6}
    status, answer = await api.post("/diff/img2img", body)
    assert (status, answer["status"]) == (200, "success")
    assert (answer["meta"]["init_image"], answer["meta"]["strength"]) == (
        "https://img.example/fox.png", 0.6
    )  # fmt: skip


async def test_controlnet_always_processes_and_echoes_its_fields(api: Api) -> None:
    body = {**CONTROLNET, "prompt": "a dancer", "controlnet_type": "openpose",
            "control_image": "https://img.example/c.png", "strength": 0.5,
            "controlnet_conditioning_scale": 2, "guess_mode": True}  # fmt: skip
    status, answer = await api.post("/diff/controlnet", body)
    assert (status, answer["status"]) == (200, "processing")
    meta = answer["meta"]
    assert meta["controlnet_model"] == "openpose" and meta["strength"] == "0.5"
    assert meta["control_image"] == "https://img.example/c.png" and meta["guess_mode"] == "yes"
    api.sim.advance(answer["eta"])
    _, fetched = await api.post("/diff/fetch", {"id": answer["id"]})
    assert fetched["status"] == "success"


@pytest.mark.parametrize("missing", ["model_id", "init_image", "controlnet_model"])
async def test_controlnet_required_fields(api: Api, missing: str) -> None:
    body = {k: v for k, v in CONTROLNET.items() if k != missing}
    status, answer = await api.post("/diff/controlnet", body)
    assert (status, answer["error"]["message"]) == (400, f"{missing} is required")


@pytest.mark.parametrize(
    ("kind", "body", "message"),
    [
        ("txt2img", {"width": "1025"}, "width must be a whole number from 1 to 1024 (got 1025)"),
        ("txt2img", {"height": "2048"}, "height must be a whole number from 1 to 1024 (got 2048)"),
        ("txt2img", {"width": 512}, 'width must be a string such as "512" (got 512)'),
        ("img2img", {"height": 512.0}, 'height must be a string such as "512" (got 512.0)'),
        ("txt2img", {"num_inference_steps": 31},
         'num_inference_steps must be a string such as "31" (got 31)'),
        ("txt2img", {"width": "wide"}, "width must be a whole number from 1 to 1024 (got 'wide')"),
        ("txt2img", {"width": "0"}, "width must be a whole number from 1 to 1024 (got 0)"),
        ("txt2img", {"num_inference_steps": "30"}, "num_inference_steps must be one of 21, 31"),
        ("img2img", {"guidance_scale": 0.5}, "guidance_scale must be within 1 to 20 (got 0.5)"),
        ("txt2img", {"guidance_scale": 21}, "guidance_scale must be within 1 to 20 (got 21)"),
        ("txt2img", {"guidance_scale": "x"}, "guidance_scale must be a number"),
        ("txt2img", {"seed": -1}, "seed must be a non-negative integer or null"),
        ("txt2img", {"seed": "7"}, "seed must be a non-negative integer or null"),
        ("txt2img", {"prompt": 5}, "prompt must be a string"),
        ("img2img", {"strength": 1.5}, "strength must be within 0 to 1"),
        ("img2img", {"init_image": "not-a-url"}, "init_image must be an http(s) URL"),
        ("controlnet", {**CONTROLNET, "controlnet_conditioning_scale": 25},
         "controlnet_conditioning_scale must be within 1 to 20"),
        ("controlnet", {**CONTROLNET, "controlnet_conditioning_scale": 0.5},
         "controlnet_conditioning_scale must be within 1 to 20"),
        ("upscale", {}, "url is required"),
        ("upscale", {"url": "https://img.example/a.png", "scale": 5},
         "scale must be a whole number from 2 to 4"),
    ],
)  # fmt: skip
async def test_diffusion_field_rules(
    api: Api, kind: str, body: dict[str, object], message: str
) -> None:
    status, answer = await api.post(f"/diff/{kind}", body)
    assert status == 400
    assert answer["error"]["message"].startswith(message)
    assert api.sim.state.diffusion_jobs == {}
    assert api.sim.state.accounts[KEY].charged == 0


async def test_a_body_that_is_not_an_object_is_400(api: Api) -> None:
    status, answer = await api.post("/diff/txt2img", raw="[1, 2]")
    assert (status, answer["error"]["message"]) == (400, "the body must be a JSON object")


async def test_upscale_output_is_a_single_url(api: Api) -> None:
    status, answer = await api.post(
        "/diff/upscale", {"url": "https://img.example/a.png", "scale": 4}
    )
    assert status == 200
    assert answer["status"] == "success" and isinstance(answer["output"], str)
    assert set(answer) == {"status", "generationTime", "id", "output"}
    status, data = await api.download(answer["output"])
    assert status == 200 and Image.open(io.BytesIO(data)).size == (512, 512)


async def test_fetch_rules(api: Api) -> None:
    for body, message in (
        ({}, "id is required"),
        ({"id": "abc"}, "id must be a whole number"),
        ({"id": 424242}, "no diffusion job with id 424242"),
    ):
        status, answer = await api.post("/diff/fetch", body, key=None)
        assert status == 400 and answer["error"]["message"].startswith(message)
    status, _ = await api.post("/diff/fetch", {"id": 1}, key="wrong")
    assert status == 401


async def test_outputs_expire_seven_simulated_days_after_they_are_ready() -> None:
    async with running(time_scale=0.5) as api:
        _, answer = await api.post("/diff/txt2img", {"prompt": "a fox"})
        [url] = answer["output"]
        api.sim.advance(7 * 86400 * 0.5 - 1)
        assert (await api.download(url))[0] == 200
        api.sim.advance(1)
        status, data = await api.download(url)
        assert status == 404 and b"image expired" in data


async def test_diffusion_charges_credits_and_refuses_when_short() -> None:
    async with running(credits=3) as api:
        account = api.sim.state.accounts[KEY]
        status, _ = await api.post("/diff/txt2img", {"prompt": "a fox"})
        assert status == 200 and (account.balance, account.charged) == (1, 2)
        status, answer = await api.post("/diff/controlnet", CONTROLNET)
        assert (status, answer["error"]["message"]) == (400, "insufficient credit balance")
        status, _ = await api.post("/diff/upscale", {"url": "https://img.example/a.png"})
        assert status == 200 and (account.balance, account.charged) == (0, 3)
        assert api.sim.state.creations == {"diff_txt2img": 1, "diff_upscale": 1}


async def test_same_seed_and_prompt_give_the_same_picture(api: Api) -> None:
    urls = []
    for seed in (11, 11, 12):
        _, answer = await api.post("/diff/txt2img", {"prompt": "a fox", "seed": seed})
        urls.append(answer["output"][0])
    pictures = [(await api.download(url))[1] for url in urls]
    assert pictures[0] == pictures[1] != pictures[2]
