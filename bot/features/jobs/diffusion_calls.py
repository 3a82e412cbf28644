"""Every diffusion endpoint as one typed table entry: its request model, the bound
:class:`bot.api.DiffusionClient` method that sends it, and what it costs.

A job keeps its endpoint's name and request body in its parameters, so 🔄 replays it through
the same entry. Diffusion is charged when the provider accepts a job, and its answers carry no
price: the ledger records ``[limits] diffusion_credits`` as an estimate
(docs/provider.md#diffusion-prices).
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
from bot.features.jobs.starter import Submitted
from bot.features.jobs.tracking.provider_state import diffusion_result_fields, poll_delay
from bot.features.jobs.webhook_addresses import Webhook
from bot.kernel import N_, LimitsSettings, UserError, _
from storage import DiffusionType, Job, JobStatus

DiffusionEndpoint = DiffusionType
ENDPOINTS: tuple[DiffusionEndpoint, ...] = get_args(DiffusionEndpoint)
RequestT = TypeVar("RequestT", bound=RequestModel)
Clock = Callable[[], float]
NO_ID_ERROR = N_(
    "The diffusion service accepted the job but sent neither its images nor an id to fetch "
    "them with."
)


@dataclass(frozen=True)
class DiffusionEndpointCall(Generic[RequestT]):
    """One endpoint: its name, its request model and the client method that sends it."""

    name: DiffusionEndpoint
    model: type[RequestT]
    send: Callable[[DiffusionClient, RequestT], Awaitable[DiffusionResponse]]

    def prepare(
        self, client: DiffusionClient, body: Mapping[str, Any], limits: LimitsSettings, clock: Clock
    ) -> DiffusionCall[RequestT]:
        """The call of this endpoint with ``body``, validated now (``InvalidRequest``), priced
        by ``[limits] diffusion_credits``."""
        credits = limits.diffusion_credits[self.name]
        return DiffusionCall(self.model(**body), partial(self.send, client), credits, limits, clock)


DIFFUSION_ENDPOINTS: Mapping[DiffusionEndpoint, DiffusionEndpointCall[Any]] = {
    "txt2img": DiffusionEndpointCall("txt2img", Txt2ImgRequest, DiffusionClient.txt2img),
    "img2img": DiffusionEndpointCall("img2img", Img2ImgRequest, DiffusionClient.img2img),
    "upscale": DiffusionEndpointCall("upscale", DiffusionUpscaleRequest, DiffusionClient.upscale),
    "controlnet": DiffusionEndpointCall(
        "controlnet", ControlNetRequest, DiffusionClient.controlnet
    ),
}


def endpoint_named(name: str) -> DiffusionEndpoint:
    """The endpoint a job recorded by name; :class:`UserError` for one genbot does not know."""
    for endpoint in ENDPOINTS:
        if endpoint == name:
            return endpoint
    raise UserError(_("Unknown diffusion endpoint {name}.", name=repr(name)))


@dataclass(frozen=True)
class DiffusionCall(Generic[RequestT]):
    """A diffusion request ready to send once its job is stored. An answer with images
    finishes the job at once (even one without an id); ``processing`` stores the provider's
    ``eta`` as ``next_poll_at`` for the tracker."""

    request: RequestT
    send: Callable[..., Awaitable[DiffusionResponse]]
    """The :class:`bot.api.DiffusionClient` method: ``send(request, key=…)``."""
    credits: int
    limits: LimitsSettings
    clock: Clock

    async def __call__(self, job: Job, hook: Webhook | None) -> Submitted:
        answer = await self.send(self.request, key=job.provider_key or "")
        provider_id = str(answer.id) if answer.id is not None else None
        if answer.is_ready:
            return self._submitted(provider_id, "finished", diffusion_result_fields(answer))
        if provider_id is None:
            failed = {"error": _(NO_ID_ERROR), "result": {"accepted": True}}
            return self._submitted(None, "failed", failed)
        delay = poll_delay(answer.eta, self.limits, self.limits.poll_interval_min)
        return self._submitted(provider_id, "processing", {"next_poll_at": self.clock() + delay})

    def _submitted(
        self, provider_id: str | None, status: JobStatus, fields: Mapping[str, Any]
    ) -> Submitted:
        return Submitted(provider_id, status, fields, self.credits, credits_estimated=True)
