"""The diffusion table: each endpoint's request model, client method and price."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.api import (
    ControlNetRequest,
    DiffusionClient,
    DiffusionUpscaleRequest,
    Img2ImgRequest,
    InvalidRequest,
    Txt2ImgRequest,
)
from bot.features.jobs.diffusion import DiffusionJobs
from bot.features.jobs.diffusion_calls import DIFFUSION_ENDPOINTS, ENDPOINTS, endpoint_named
from bot.kernel import LimitsSettings, UserError


def test_every_endpoint_has_its_model_its_client_method_and_a_configured_price() -> None:
    table = {
        name: (entry.name, entry.model, entry.send) for name, entry in DIFFUSION_ENDPOINTS.items()
    }
    assert table == {
        "txt2img": ("txt2img", Txt2ImgRequest, DiffusionClient.txt2img),
        "img2img": ("img2img", Img2ImgRequest, DiffusionClient.img2img),
        "upscale": ("upscale", DiffusionUpscaleRequest, DiffusionClient.upscale),
        "controlnet": ("controlnet", ControlNetRequest, DiffusionClient.controlnet),
    }
    assert DiffusionJobs.commands == {f"diffusion.{name}" for name in ENDPOINTS}
    limits = LimitsSettings(diffusion_credits={"controlnet": 5})
    assert limits.diffusion_credits == {"txt2img": 2, "img2img": 2, "upscale": 1, "controlnet": 5}
    with pytest.raises(ValidationError, match="no diffusion endpoint 'txt3img'"):
        LimitsSettings(diffusion_credits={"txt3img": 1})


def test_a_request_is_validated_when_prepared_and_unknown_endpoints_are_refused() -> None:
    entry = DIFFUSION_ENDPOINTS["txt2img"]
    with pytest.raises(InvalidRequest):
        entry.model(prompt="a fox", width=100000)
    assert endpoint_named("img2img") == "img2img"
    with pytest.raises(UserError, match="Unknown diffusion endpoint 'txt3img'"):
        endpoint_named("txt3img")
