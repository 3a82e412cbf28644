"""The provider request a follow-up button asks for (pure): the endpoint's request model with
the pressed job's task id as origin, the parent's aspect ratio kept (the provider's default is
1:1) and, for a remixed press, the changed prompt."""

from __future__ import annotations

import hashlib
import json
from typing import TypeVar, get_args

from bot.api import (
    InpaintRequest,
    InvalidRequest,
    OutpaintRequest,
    PanDirection,
    PanRequest,
    RerollRequest,
    UpscaleIndex,
    UpscaleRequest,
    VariationIndex,
    VariationRequest,
)
from bot.api.models_tasks import WebhookFields
from bot.buttons import Derivative
from bot.core import UserError
from bot.jobs.starter import Webhook

RequestT = TypeVar("RequestT", bound=WebhookFields)
ChoiceT = TypeVar("ChoiceT", bound=str)
ImageRequest = (
    RerollRequest
    | UpscaleRequest
    | VariationRequest
    | OutpaintRequest
    | PanRequest
    | InpaintRequest
)
UPSCALE_INDEXES: tuple[UpscaleIndex, ...] = get_args(UpscaleIndex)
VARIATION_INDEXES: tuple[VariationIndex, ...] = get_args(VariationIndex)
PAN_DIRECTIONS: tuple[PanDirection, ...] = get_args(PanDirection)


def with_webhook(request: RequestT, hook: Webhook | None) -> RequestT:
    """``request`` with the job's webhook address and secret, when it has them."""
    if hook is None:
        return request
    return request.model_copy(update={"webhook_endpoint": hook[0], "webhook_secret": hook[1]})


def values_digest(*values: object) -> str:
    """A short digest of normalised form values (part of a derivative's idempotency key)."""
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:12]


def choice(value: object, options: tuple[ChoiceT, ...], name: str) -> ChoiceT | None:
    """``value`` as one of ``options`` (None stays None); :class:`InvalidRequest` naming
    ``name`` and the allowed values otherwise."""
    if value is None:
        return None
    for option in options:
        if option == value:
            return option
    allowed = ", ".join(options)
    raise InvalidRequest(name, allowed, f"{name} must be one of {allowed} (got {value!r})")


def required_choice(value: object, options: tuple[ChoiceT, ...], name: str) -> ChoiceT:
    """Like :func:`choice`, for a value that must be given."""
    chosen = choice(value, options, name)
    if chosen is None:
        raise InvalidRequest(name, ", ".join(options), f"{name} is missing")
    return chosen


def derivative_request(
    derivative: Derivative, origin: str, aspect: str | None, prompt: str | None = None
) -> ImageRequest:
    """The request for a button's ``derivative`` of the task ``origin``; ``prompt`` replaces
    the parent's prompt where the endpoint takes one (reroll, variation, outpaint, pan)."""
    params = dict(derivative.params)
    if derivative.endpoint == "upscale":
        index = required_choice(params.get("index"), UPSCALE_INDEXES, "index")
        return UpscaleRequest(origin_task_id=origin, index=index)
    if derivative.endpoint == "variation":
        vary = required_choice(params.get("index"), VARIATION_INDEXES, "index")
        return VariationRequest(
            origin_task_id=origin, index=vary, aspect_ratio=aspect, prompt=prompt
        )
    if derivative.endpoint == "reroll":
        return RerollRequest(origin_task_id=origin, aspect_ratio=aspect, prompt=prompt)
    if derivative.endpoint == "outpaint":
        zoom = params["zoom_ratio"]
        kept = None if zoom == "1" else aspect
        return OutpaintRequest(
            origin_task_id=origin, zoom_ratio=zoom, aspect_ratio=kept, prompt=prompt
        )
    if derivative.endpoint == "pan":
        direction = choice(params.get("direction"), PAN_DIRECTIONS, "direction")
        return PanRequest(origin_task_id=origin, direction=direction, prompt=prompt)
    raise UserError("This button is no longer supported.")
