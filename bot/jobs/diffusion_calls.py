"""Every diffusion endpoint as one typed table entry: its request model, the bound
:class:`bot.api.DiffusionClient` method that sends it, and what it costs.

A job keeps its endpoint's name and request body in its parameters, so 🔄 replays it through
the same entry. Diffusion is charged when the provider accepts a job: the provider's answers
carry no price, so the ledger records the provider's published prices (which the simulator
uses).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar, get_args

from bot.api import (
    ControlNetRequest,
    DiffusionClient,
    DiffusionResponse,
    DiffusionUpscaleRequest,
    Img2ImgRequest,
    RequestModel,
    Txt2ImgRequest,
)
from bot.config import LimitsSettings
from bot.core import UserError
from bot.jobs.results import diffusion_result_fields, poll_delay
from bot.jobs.starter import Submitted
from bot.jobs.webhook_addresses import Webhook
from storage import DiffusionType, Job

DiffusionEndpoint = DiffusionType
ENDPOINTS: tuple[DiffusionEndpoint, ...] = get_args(DiffusionEndpoint)
RequestT = TypeVar("RequestT", bound=RequestModel)
Clock = Callable[[], float]
NO_ID_ERROR = (
    "The diffusion service accepted the job but sent neither its images nor an id to fetch "
    "them with."
)


@dataclass(frozen=True)
class DiffusionEndpointCall(Generic[RequestT]):
    """One endpoint: its request model, the client method that sends it, its price."""

    model: type[RequestT]
    send: Callable[[DiffusionClient, RequestT], Awaitable[DiffusionResponse]]
    credits: int

    def prepare(
        self, client: DiffusionClient, body: Mapping[str, Any], limits: LimitsSettings, clock: Clock
    ) -> DiffusionCall[RequestT]:
        """The call of this endpoint with ``body``, validated now (``InvalidRequest``)."""
        return DiffusionCall(
            self.model(**body), partial(self.send, client), self.credits, limits, clock
        )


DIFFUSION_ENDPOINTS: Mapping[DiffusionEndpoint, DiffusionEndpointCall[Any]] = {
    "txt2img": DiffusionEndpointCall(Txt2ImgRequest, DiffusionClient.txt2img, 2),
    "img2img": DiffusionEndpointCall(Img2ImgRequest, DiffusionClient.img2img, 2),
    "upscale": DiffusionEndpointCall(DiffusionUpscaleRequest, DiffusionClient.upscale, 1),
    "controlnet": DiffusionEndpointCall(ControlNetRequest, DiffusionClient.controlnet, 3),
}


def endpoint_named(name: str) -> DiffusionEndpoint:
    """The endpoint a job recorded by name; :class:`UserError` for one genbot does not know."""
    for endpoint in ENDPOINTS:
        if endpoint == name:
            return endpoint
    raise UserError(f"Unknown diffusion endpoint {name!r}.")


@dataclass(frozen=True)
class DiffusionCall(Generic[RequestT]):
    """A diffusion request ready to send once its job is stored. An answer with images
    finishes the job at once (even one without an id); ``processing`` stores the provider's
    ``eta`` as ``next_poll_at`` for the tracker."""

    request: RequestT
    send: Callable[[RequestT], Awaitable[DiffusionResponse]]
    credits: int
    limits: LimitsSettings
    clock: Clock

    async def __call__(self, job: Job, hook: Webhook | None) -> Submitted:
        answer = await self.send(self.request)
        provider_id = str(answer.id) if answer.id is not None else None
        if answer.is_ready:
            return Submitted(provider_id, "finished", diffusion_result_fields(answer), self.credits)
        if provider_id is None:
            failed = {"error": NO_ID_ERROR, "result": {"accepted": True}}
            return Submitted(None, "failed", failed, self.credits)
        delay = poll_delay(answer.eta, self.limits, self.limits.poll_interval_min)
        return Submitted(
            provider_id, "processing", {"next_poll_at": self.clock() + delay}, self.credits
        )
