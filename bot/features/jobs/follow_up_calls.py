"""Every follow-up button of an image task as one typed table entry: the action, the request it
builds from the pressed job, and the :class:`bot.api.TaskClient` method that sends it.

A U1 press reads ``FOLLOW_UPS["upscale1"]``: ``UpscaleRequest(origin_task_id=…, index="1")``
sent by ``TaskClient.upscale``. Derivatives keep the parent's aspect ratio (the provider's
default is 1:1); a remixed press (``remix_<action>``) sends the prompt its form changed; Custom
Zoom and Vary (Region) send what their forms hold. A request is built — and so validated —
before anything is stored (:meth:`FollowUp.prepare`, which gives the
:class:`~bot.features.jobs.starter.TaskCall` the starter makes once the job is stored); a
refusal of the follow-up itself is then the button's fault (the call's ``refusable``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar, get_args

from bot.api import (
    CreateTaskResponse,
    InpaintRequest,
    InvalidRequest,
    OutpaintRequest,
    PanDirection,
    PanRequest,
    RequestModel,
    RerollRequest,
    SeedRequest,
    TaskClient,
    UpscaleIndex,
    UpscaleRequest,
    VariationIndex,
    VariationRequest,
)
from bot.features.jobs.starter import TaskCall
from bot.kernel import _
from storage import TaskType

RequestT = TypeVar("RequestT", bound=RequestModel)
ChoiceT = TypeVar("ChoiceT", bound=str)


UPSCALE_INDEXES: tuple[UpscaleIndex, ...] = get_args(UpscaleIndex)
VARIATION_INDEXES: tuple[VariationIndex, ...] = get_args(VariationIndex)
PAN_DIRECTIONS: tuple[PanDirection, ...] = get_args(PanDirection)


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
    raise InvalidRequest(
        name,
        allowed,
        _(
            "{name} must be one of {allowed} (got {value})",
            name=name,
            allowed=allowed,
            value=repr(value),
        ),
    )


@dataclass(frozen=True)
class FollowUpInput:
    """What a follow-up request is built from: the pressed job's task and aspect ratio, and
    what a form added (a changed prompt, a zoom ratio, a mask)."""

    task_id: str
    aspect_ratio: str | None = None
    prompt: str | None = None
    zoom_ratio: str | None = None
    mask: str | None = None


@dataclass(frozen=True)
class FollowUp(Generic[RequestT]):
    """One follow-up: the type of job it makes, how its request is built and the client
    method that sends it. ``inherits``: the job keeps its parent's aspect ratio, mode and
    version (every image follow-up; not 🌱 Seed, which makes no image); ``webhook``: the
    provider is asked to notify genbot when it finishes."""

    task_type: TaskType
    build: Callable[[FollowUpInput], RequestT]
    send: Callable[[TaskClient, RequestT], Awaitable[CreateTaskResponse]]
    inherits: bool = True
    webhook: bool = True

    def prepare(self, action: str, client: TaskClient, given: FollowUpInput) -> TaskCall[RequestT]:
        """The call a press of ``action`` makes through ``client``, its request built (and so
        validated) now."""
        return TaskCall(self.build(given), partial(self.send, client), refusable=action)


def _upscale(index: UpscaleIndex) -> FollowUp[UpscaleRequest]:
    return FollowUp(
        "upscale",
        lambda given: UpscaleRequest(origin_task_id=given.task_id, index=index),
        TaskClient.upscale,
    )


def _variation(index: VariationIndex) -> FollowUp[VariationRequest]:
    return FollowUp(
        "variation",
        lambda given: VariationRequest(
            origin_task_id=given.task_id,
            index=index,
            aspect_ratio=given.aspect_ratio,
            prompt=given.prompt,
        ),
        TaskClient.variation,
    )


def _reroll(given: FollowUpInput) -> RerollRequest:
    return RerollRequest(
        origin_task_id=given.task_id, aspect_ratio=given.aspect_ratio, prompt=given.prompt
    )


def _zoom(zoom_ratio: str) -> FollowUp[OutpaintRequest]:
    return FollowUp(
        "outpaint",
        lambda given: OutpaintRequest(
            origin_task_id=given.task_id,
            zoom_ratio=zoom_ratio,
            aspect_ratio=None if zoom_ratio == "1" else given.aspect_ratio,
            prompt=given.prompt,
        ),
        TaskClient.outpaint,
    )


def _custom_zoom(given: FollowUpInput) -> OutpaintRequest:
    if given.zoom_ratio is None:
        raise InvalidRequest("zoom_ratio", "1–2", _("zoom_ratio is missing"))
    return OutpaintRequest(
        origin_task_id=given.task_id,
        zoom_ratio=given.zoom_ratio,
        aspect_ratio=given.aspect_ratio,
        prompt=given.prompt,
    )


def _pan(direction: PanDirection) -> FollowUp[PanRequest]:
    return FollowUp(
        "pan",
        lambda given: PanRequest(
            origin_task_id=given.task_id, direction=direction, prompt=given.prompt
        ),
        TaskClient.pan,
    )


def _vary_region(given: FollowUpInput) -> InpaintRequest:
    if given.mask is None:
        raise InvalidRequest("mask", "an image", _("mask is missing"))
    return InpaintRequest(origin_task_id=given.task_id, mask=given.mask, prompt=given.prompt)


FOLLOW_UPS: Mapping[str, FollowUp[Any]] = {
    **{f"upscale{index}": _upscale(index) for index in UPSCALE_INDEXES[:4]},
    **{f"upscale_{kind}": _upscale(kind) for kind in UPSCALE_INDEXES[4:]},
    **{f"variation{index}": _variation(index) for index in VARIATION_INDEXES[:4]},
    "high_variation": _variation("high_variation"),
    "low_variation": _variation("low_variation"),
    "reroll": FollowUp("reroll", _reroll, TaskClient.reroll),
    "vary_region": FollowUp("inpaint", _vary_region, TaskClient.inpaint),
    "outpaint_2": _zoom("2"),
    "outpaint_1.5": _zoom("1.5"),
    "outpaint_square": _zoom("1"),
    "outpaint_custom": FollowUp("outpaint", _custom_zoom, TaskClient.outpaint),
    **{f"pan_{direction}": _pan(direction) for direction in PAN_DIRECTIONS},
    "seed": FollowUp(
        "seed",
        lambda given: SeedRequest(task_id=given.task_id),
        TaskClient.seed,
        inherits=False,
        webhook=False,
    ),
}
"""Every follow-up button of an image task, by action (see :mod:`bot.features.jobs.buttons` for
labels)."""
