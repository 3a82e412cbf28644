"""Family C, image diffusion: request bodies and responses (docs/provider.md, "Diffusion")."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from bot.api.errors import N_, InvalidRequest
from bot.api.models_common import LenientInt, LenientStr, ResponseModel
from bot.api.validation import RequestModel, check_at_least, check_http_url, check_range, shown

MAX_SIDE = 1024
INFERENCE_STEPS: tuple[str, ...] = ("21", "31", "41", "51")


def _side(field: str, value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip() if isinstance(value, int | str) else None
    whole = text is not None and text.isdigit() and int(text) >= 1
    if not whole or int(str(text)) > MAX_SIDE:
        allowed, message, got = (
            (
                f"at most {MAX_SIDE}",
                N_("{field} must be at most {most} (got {got})"),
                int(str(text)),
            )
            if whole
            else (
                f"a whole number from 1 to {MAX_SIDE}",
                N_("{field} must be a whole number of pixels from 1 to {most} (got {got})"),
                shown(value),
            )
        )
        raise InvalidRequest(field, allowed, message, field=field, most=MAX_SIDE, got=got)
    return str(int(str(text)))


class _DiffusionCommon(RequestModel):
    """Fields shared by txt2img, img2img and controlnet, with the common rules of 4.3.

    ``width``, ``height`` and ``num_inference_steps`` accept numbers and are sent as text.
    ``seed`` ``None`` means random and is sent as ``null``, as the documentation says; an absent
    seed it does not describe (docs/provider.md#diffusion-seed).
    """

    model_id: str | None = None
    prompt: str | None = None
    negative_prompt: str | None = None
    width: str | None = None
    height: str | None = None
    seed: int | None = None
    lora_model: str | None = None
    lora_strength: float | None = None
    num_inference_steps: str | None = None
    guidance_scale: float | None = None

    @field_validator("width", mode="before")
    @classmethod
    def _width(cls, value: Any) -> Any:
        return _side("width", value)

    @field_validator("height", mode="before")
    @classmethod
    def _height(cls, value: Any) -> Any:
        return _side("height", value)

    @field_validator("num_inference_steps", mode="before")
    @classmethod
    def _steps(cls, value: Any) -> Any:
        if value is None:
            return None
        text = str(value).strip() if isinstance(value, int | str) else ""
        if isinstance(value, bool) or text not in INFERENCE_STEPS:
            allowed = ", ".join(INFERENCE_STEPS)
            raise InvalidRequest(
                "num_inference_steps",
                allowed,
                N_("{field} must be one of {expected} (got {got})"),
                field="num_inference_steps",
                expected=allowed,
                got=shown(value),
            )
        return text

    @field_validator("guidance_scale")
    @classmethod
    def _guidance(cls, value: float | None) -> float | None:
        return check_range("guidance_scale", value, 1, 20)

    def to_body(self) -> dict[str, Any]:
        body = super().to_body()
        body["seed"] = self.seed
        return body

    @field_validator("lora_model")
    @classmethod
    def _lora_model(cls, value: str | None) -> str | None:
        if value is None:
            return None
        ids = [part.strip() for part in value.split(",")]
        if not all(ids):
            raise InvalidRequest(
                "lora_model",
                "comma-separated model ids",
                N_("lora_model must be comma-separated model ids (got {got})"),
                got=shown(value),
            )
        return ",".join(ids)


class Txt2ImgRequest(_DiffusionCommon):
    """Body of ``POST /diff/txt2img``."""


class Img2ImgRequest(_DiffusionCommon):
    """Body of ``POST /diff/img2img``: ``strength`` 1.0 discards all of ``init_image``."""

    init_image: str | None = None
    strength: float | None = None

    @field_validator("init_image")
    @classmethod
    def _init_image(cls, value: str | None) -> str | None:
        return None if value is None else check_http_url("init_image", value)

    @field_validator("strength")
    @classmethod
    def _strength(cls, value: float | None) -> float | None:
        return check_range("strength", value, 0, 1)


class ControlNetRequest(_DiffusionCommon):
    """Body of ``POST /diff/controlnet``."""

    model_id: str
    init_image: str
    controlnet_model: str
    controlnet_type: str | None = None
    control_image: str | None = None
    mask_image: str | None = None
    strength: float | None = None
    controlnet_conditioning_scale: float | None = None

    @field_validator("model_id")
    @classmethod
    def _model_id(cls, value: str) -> str:
        if not value.strip():
            raise InvalidRequest(
                "model_id", "a model id", N_("{field} must not be empty"), field="model_id"
            )
        return value

    @field_validator("controlnet_model")
    @classmethod
    def _controlnet_model(cls, value: str) -> str:
        if not value.strip():
            raise InvalidRequest(
                "controlnet_model",
                "a model id",
                N_("{field} must not be empty"),
                field="controlnet_model",
            )
        return value

    @field_validator("init_image")
    @classmethod
    def _init_image(cls, value: str) -> str:
        return check_http_url("init_image", value)

    @field_validator("control_image")
    @classmethod
    def _control_image(cls, value: str | None) -> str | None:
        return None if value is None else check_http_url("control_image", value)

    @field_validator("mask_image")
    @classmethod
    def _mask_image(cls, value: str | None) -> str | None:
        """A link, like the other images (docs/provider.md#mask-image)."""
        return None if value is None else check_http_url("mask_image", value)

    @field_validator("strength")
    @classmethod
    def _strength(cls, value: float | None) -> float | None:
        return check_range("strength", value, 0, 1)

    @field_validator("controlnet_conditioning_scale")
    @classmethod
    def _conditioning_scale(cls, value: float | None) -> float | None:
        return check_range("controlnet_conditioning_scale", value, 1, 20)


class DiffusionUpscaleRequest(RequestModel):
    """Body of ``POST /diff/upscale``."""

    url: str
    scale: int | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return check_http_url("url", value)

    @field_validator("scale")
    @classmethod
    def _scale(cls, value: int | None) -> int | None:
        return check_at_least("scale", value, 1)


class DiffusionFetchRequest(RequestModel):
    """Body of ``POST /diff/fetch``."""

    id: int

    @field_validator("id")
    @classmethod
    def _id(cls, value: int) -> int:
        if value < 0:
            raise InvalidRequest("id", "a generation id", f"id must not be negative (got {value})")
        return value


class DiffusionMeta(ResponseModel):
    """``meta`` of a diffusion response; fields vary by endpoint, unknown ones are kept."""

    prompt: str | None = None
    model_id: str | None = None
    negative_prompt: str | None = None
    W: LenientInt | None = None
    H: LenientInt | None = None
    seed: LenientInt | None = None
    steps: LenientInt | None = None
    lora: str | None = None
    init_image: str | None = None
    strength: LenientStr | None = None
    controlnet_model: str | None = None
    controlnet_type: str | None = None
    guess_mode: LenientStr | None = None
    control_image: str | None = None
    mask_image: str | None = None


class DiffusionResponse(ResponseModel):
    """Any diffusion answer: generation, processing, fetch or upscale.

    ``output`` is always a list (the upscale answer's single URL becomes a one-item list);
    ``message`` is read from ``messege`` or ``message``.
    """

    status: str = ""
    id: LenientInt | None = None
    output: list[str] = Field(default_factory=list)
    generation_time: float | None = Field(default=None, alias="generationTime")
    eta: float | None = None
    message: str = ""
    meta: DiffusionMeta | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if not data.get("message") and data.get("messege"):
            data["message"] = data["messege"]
        output = data.get("output")
        if isinstance(output, str):
            data["output"] = [output] if output else []
        elif isinstance(output, list):
            data["output"] = [url for url in output if isinstance(url, str) and url]
        if isinstance(data.get("message"), list | dict):
            data["message"] = str(data["message"])
        return data

    @property
    def is_ready(self) -> bool:
        """Images are available in ``output``."""
        return self.status == "success" and bool(self.output)

    @property
    def is_failed(self) -> bool:
        """The provider reported an error instead of images or progress: an ``error``,
        ``failed`` or ``failure`` status (docs/provider.md#diffusion-failure)."""
        return self.status.lower() in ("error", "failed", "failure")
