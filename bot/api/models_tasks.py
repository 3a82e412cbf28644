"""Family B, image tasks: the request bodies (docs/provider.md, "Image tasks"; answers are in
:mod:`bot.api.models_task_records`)."""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, field_validator

from bot.api.errors import N_, InvalidRequest
from bot.api.validation import (
    RequestModel,
    TaskId,
    WebhookSecret,
    check_http_url,
    check_non_empty,
    check_task_id,
    format_number,
    int_as_text,
    shown,
)

ProcessMode = Literal["relax", "mixed", "fast", "turbo"]
UpscaleIndex = Literal["1", "2", "3", "4", "2x", "4x", "light", "beta", "subtle", "creative"]
VariationIndex = Literal["1", "2", "3", "4", "high_variation", "low_variation"]
PanDirection = Literal["up", "down", "left", "right"]
BlendDimension = Literal["square", "portrait", "landscape"]

MULTI_FETCH_MAX_IDS = 50
BLEND_MIN_IMAGES = 2
BLEND_MAX_IMAGES = 5
_ASPECT_RATIO = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*$")


def _check_aspect_ratio(value: str | None) -> str | None:
    if value is None:
        return None
    match = _ASPECT_RATIO.match(value)
    if not match or int(match[1]) == 0 or int(match[2]) == 0:
        raise InvalidRequest(
            "aspect_ratio",
            "width:height, e.g. 16:9",
            N_("aspect_ratio must look like 16:9 (got {got})"),
            got=shown(value),
        )
    return f"{int(match[1])}:{int(match[2])}"


AspectRatio = Annotated[str | None, AfterValidator(_check_aspect_ratio)]
"""``width:height``, sent normalised (``16 : 9`` as ``16:9``)."""


class WebhookFields(RequestModel):
    """Webhook parameters of creation endpoints. The client additionally enforces the
    ``https://domain`` on port 443 rule (loopback http only with its explicit opt-in)."""

    webhook_endpoint: str | None = None
    webhook_secret: WebhookSecret = None

    @field_validator("webhook_endpoint")
    @classmethod
    def _endpoint_is_url(cls, value: str | None) -> str | None:
        return None if not value else check_http_url("webhook_endpoint", value)


class _DerivedTask(WebhookFields):
    origin_task_id: TaskId


class ImagineRequest(WebhookFields):
    """Body of ``POST /gen/v2/imagine``."""

    prompt: str
    skip_prompt_check: bool | None = None
    aspect_ratio: AspectRatio = None
    process_mode: ProcessMode | None = None

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, value: str) -> str:
        return check_non_empty("prompt", value)


class RerollRequest(_DerivedTask):
    """Body of ``POST /gen/v2/reroll`` (inherits the parent's process mode)."""

    prompt: str | None = None
    skip_prompt_check: bool | None = None
    aspect_ratio: AspectRatio = None


class UpscaleRequest(_DerivedTask):
    """Body of ``POST /gen/v2/upscale``. Which ``index`` values a parent accepts depends on its
    model version (docs/provider.md#derivative-version)."""

    index: Annotated[UpscaleIndex, BeforeValidator(int_as_text)]


class VariationRequest(_DerivedTask):
    """Body of ``POST /gen/v2/variation`` (which ``index`` values a parent accepts depends on
    its model version: docs/provider.md#derivative-version)."""

    index: Annotated[VariationIndex, BeforeValidator(int_as_text)]
    prompt: str | None = None
    skip_prompt_check: bool | None = None
    aspect_ratio: AspectRatio = None


class InpaintRequest(_DerivedTask):
    """Body of ``POST /gen/v2/inpaint``; ``mask`` is the base64 image marking the area."""

    mask: str
    prompt: str | None = None
    skip_prompt_check: bool | None = None

    @field_validator("mask")
    @classmethod
    def _mask(cls, value: str) -> str:
        compact = "".join(value.split())
        try:
            decoded = base64.b64decode(compact, validate=True)
        except (binascii.Error, ValueError):
            decoded = b""
        if not decoded:
            raise InvalidRequest("mask", "a base64 image", "mask must be a base64-encoded image")
        return compact


class OutpaintRequest(_DerivedTask):
    """Body of ``POST /gen/v2/outpaint``. ``zoom_ratio`` is ``1`` (make square), ``1.5``, ``2``
    or a decimal in (1, 2]; numbers are accepted and sent as text."""

    zoom_ratio: str | None = None
    aspect_ratio: AspectRatio = None
    prompt: str | None = None
    skip_prompt_check: bool | None = None

    @field_validator("zoom_ratio", mode="before")
    @classmethod
    def _zoom_ratio(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return value
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not (number == 1 or 1 < number <= 2):
            raise InvalidRequest(
                "zoom_ratio",
                "1, 1.5, 2 or a decimal greater than 1 and at most 2",
                N_(
                    "zoom_ratio must be 1 (make square), 1.5, 2, or a decimal greater than 1 and "
                    "at most 2 (got {got})"
                ),
                got=shown(value),
            )
        return value.strip() if isinstance(value, str) else format_number(number)


class PanRequest(_DerivedTask):
    """Body of ``POST /gen/v2/pan``."""

    direction: PanDirection | None = None
    prompt: str | None = None
    skip_prompt_check: bool | None = None


class DescribeRequest(WebhookFields):
    """Body of ``POST /gen/v2/describe``. A link on the upstream CDN is refused by the client,
    which knows the configured hosts (:meth:`bot.api.TaskClient.check`)."""

    image_url: str
    process_mode: ProcessMode | None = None

    @field_validator("image_url")
    @classmethod
    def _image_url(cls, value: str) -> str:
        return check_http_url("image_url", value)


class BlendRequest(WebhookFields):
    """Body of ``POST /gen/v2/blend``: 2 to 5 image links (the upstream CDN: see
    :class:`DescribeRequest`)."""

    image_urls: list[str]
    process_mode: ProcessMode | None = None
    dimension: BlendDimension | None = None

    @field_validator("image_urls")
    @classmethod
    def _image_urls(cls, value: list[str]) -> list[str]:
        if not BLEND_MIN_IMAGES <= len(value) <= BLEND_MAX_IMAGES:
            raise InvalidRequest(
                "image_urls",
                f"{BLEND_MIN_IMAGES} to {BLEND_MAX_IMAGES} images",
                N_("image_urls must hold {least} to {most} images (got {got})"),
                least=BLEND_MIN_IMAGES,
                most=BLEND_MAX_IMAGES,
                got=len(value),
            )
        return [check_http_url(f"image_urls[{i}]", url) for i, url in enumerate(value)]


class SeedRequest(RequestModel):
    """Body of ``POST /gen/v2/seed``: the id of a generation task."""

    task_id: TaskId


class FetchRequest(SeedRequest):
    """Body of ``POST /gen/v2/fetch``."""


class MultiFetchRequest(RequestModel):
    """Body of one ``POST /gen/v2/multi_fetch`` call: 1 to 50 ids (the client splits more)."""

    task_ids: list[str]

    @field_validator("task_ids")
    @classmethod
    def _task_ids(cls, value: list[str]) -> list[str]:
        if not 1 <= len(value) <= MULTI_FETCH_MAX_IDS:
            raise InvalidRequest(
                "task_ids",
                f"1 to {MULTI_FETCH_MAX_IDS} ids",
                f"task_ids must hold 1 to {MULTI_FETCH_MAX_IDS} ids (got {len(value)})",
            )
        return [check_task_id(f"task_ids[{i}]", task_id) for i, task_id in enumerate(value)]
