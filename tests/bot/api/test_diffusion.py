"""Family C through DiffusionClient against the simulator."""

from __future__ import annotations

import pytest

from bot.api import (
    ApiTimeout,
    AuthenticationError,
    BadRequest,
    ControlNetRequest,
    DiffusionUpscaleRequest,
    Img2ImgRequest,
    ProviderClient,
    Txt2ImgRequest,
)
from simulator.server import RunningSimulator, serve
from tests.bot.api.support import FAST_RETRY, settings_for, sim_config

CONTROL = "https://img.example/edges.png"
CONTROLNET = ControlNetRequest(
    model_id="sd-1.5",
    init_image="https://img.example/init.png",
    controlnet_model="canny",
    control_image=CONTROL,
)


async def test_txt2img_and_fetch(sim: RunningSimulator, api: ProviderClient) -> None:
    made = await api.diffusion.txt2img(
        Txt2ImgRequest(
            prompt="a red fox",
            negative_prompt="blurry",
            width=512,  # type: ignore[arg-type]
            height="768",
            seed=42,
            num_inference_steps=31,  # type: ignore[arg-type]
            guidance_scale=7.5,
        )
    )
    ready = await api.diffusion.wait(made, timeout=5, poll_interval=0.01)
    assert ready.is_ready and ready.output
    assert made.id is not None
    fetched = await api.diffusion.fetch(made.id)
    assert fetched.output == ready.output
    sent = sim.state.requests_to("/diff/txt2img")[0].body
    assert (
        sent["width"] == "512" and sent["height"] == "768" and sent["num_inference_steps"] == "31"
    )
    assert made.meta is not None and made.meta.W == 512 and made.meta.H == 768


async def test_img2img(api: ProviderClient) -> None:
    made = await api.diffusion.img2img(
        Img2ImgRequest(prompt="in winter", init_image="https://e.com/a.png", strength=0.6)
    )
    ready = await api.diffusion.wait(made, timeout=5, poll_interval=0.01)
    assert ready.output


async def test_upscale_output_is_a_list(api: ProviderClient) -> None:
    made = await api.diffusion.upscale(DiffusionUpscaleRequest(url="https://e.com/a.png", scale=2))
    assert made.status == "success"
    assert isinstance(made.output, list) and len(made.output) == 1


async def test_controlnet_processing_then_wait(api: ProviderClient) -> None:
    made = await api.diffusion.controlnet(
        ControlNetRequest(
            model_id="sim-diffusion-1",
            init_image="https://e.com/a.png",
            controlnet_model="canny",
            controlnet_type="canny",
            control_image="https://e.com/edges.png",
            controlnet_conditioning_scale=2,
            prompt="a fox",
        )
    )
    assert made.id is not None
    ready = await api.diffusion.wait(made.id, timeout=5, poll_interval=0.01)
    assert ready.is_ready


async def test_wait_is_bounded() -> None:
    async with (
        serve(sim_config(time_scale=1.0)) as slow,
        ProviderClient(settings_for(slow.base_url), retry=FAST_RETRY) as api,
    ):
        made = await api.diffusion.controlnet(
            ControlNetRequest(
                model_id="sim-diffusion-1",
                init_image="https://e.com/a.png",
                controlnet_model="canny",
                width=1024,  # type: ignore[arg-type]
                height=1024,  # type: ignore[arg-type]
                num_inference_steps=51,  # type: ignore[arg-type]
            )
        )
        assert not made.is_ready
        with pytest.raises(ApiTimeout):
            await api.diffusion.wait(made, timeout=0.3, poll_interval=0.05)
        assert len(slow.state.requests_to("/diff/fetch")) <= 10


async def test_wrong_key(sim: RunningSimulator) -> None:
    async with ProviderClient(settings_for(sim.base_url, key="nope"), retry=FAST_RETRY) as api:
        with pytest.raises(AuthenticationError):
            await api.diffusion.txt2img(Txt2ImgRequest(prompt="x"))


async def test_a_refused_control_image_name_switches_once(caplog: pytest.LogCaptureFixture) -> None:
    # The variant dialect takes only controlnet_image (docs/provider.md#controlnet-image).
    async with (
        serve(sim_config(dialect="variant")) as sim,
        ProviderClient(settings_for(sim.base_url), retry=FAST_RETRY) as api,
    ):
        for prompt in ("a fox", "a hare"):
            answer = await api.diffusion.controlnet(
                CONTROLNET.model_copy(update={"prompt": prompt})
            )
            assert answer.meta is not None and answer.meta.control_image == CONTROL
        sent = [(r.status, r.body) for r in sim.state.requests_to("/diff/controlnet")]
        assert [status for status, _ in sent] == [400, 200, 200]
        assert "control_image" in sent[0][1] and "controlnet_image" in sent[2][1]
        assert api.diffusion.control_field == "controlnet_image"
        assert len([r for r in caplog.records if "controlnet's control_image" in r.message]) == 1


async def test_a_configured_control_image_name_is_sent_and_never_switched() -> None:
    async with (
        serve(sim_config(dialect="variant")) as sim,
        ProviderClient(
            settings_for(sim.base_url, controlnet_image_field="control_image"), retry=FAST_RETRY
        ) as api,
    ):
        with pytest.raises(BadRequest):
            await api.diffusion.controlnet(CONTROLNET)
        assert len(sim.state.requests_to("/diff/controlnet")) == 1
    async with (
        serve(sim_config(dialect="variant")) as sim,
        ProviderClient(
            settings_for(sim.base_url, controlnet_image_field="controlnet_image"),
            retry=FAST_RETRY,
        ) as api,
    ):
        await api.diffusion.controlnet(CONTROLNET)
        (sent,) = sim.state.requests_to("/diff/controlnet")
        assert sent.status == 200 and "control_image" not in sent.body
