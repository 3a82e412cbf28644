"""The diffusion table: each endpoint's request model, client method and price."""

from __future__ import annotations

import pytest

from bot.api import (
    ControlNetRequest,
    DiffusionClient,
    DiffusionUpscaleRequest,
    Img2ImgRequest,
    InvalidRequest,
    Txt2ImgRequest,
)
from bot.core import UserError
from bot.jobs.diffusion import DiffusionJobs
from bot.jobs.diffusion_calls import DIFFUSION_ENDPOINTS, ENDPOINTS, endpoint_named


def test_every_endpoint_has_its_model_its_client_method_and_its_price() -> None:
    table = {
        name: (entry.model, entry.send, entry.credits)
        for name, entry in DIFFUSION_ENDPOINTS.items()
    }
    assert table == {
        "txt2img": (Txt2ImgRequest, DiffusionClient.txt2img, 2),
        "img2img": (Img2ImgRequest, DiffusionClient.img2img, 2),
        "upscale": (DiffusionUpscaleRequest, DiffusionClient.upscale, 1),
        "controlnet": (ControlNetRequest, DiffusionClient.controlnet, 3),
    }
    assert DiffusionJobs.commands == {f"diffusion.{name}" for name in ENDPOINTS}


def test_a_request_is_validated_when_prepared_and_unknown_endpoints_are_refused() -> None:
    entry = DIFFUSION_ENDPOINTS["txt2img"]
    with pytest.raises(InvalidRequest):
        entry.model(prompt="a fox", width=100000)
    assert endpoint_named("img2img") == "img2img"
    with pytest.raises(UserError, match="Unknown diffusion endpoint 'txt3img'"):
        endpoint_named("txt3img")
