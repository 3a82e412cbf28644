"""Family C client: diffusion generation, upscale, controlnet, fetch and wait (docs/provider.md,
"Diffusion")."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import Any

from bot.api.errors import ApiTimeout, BadRequest, DiffusionFailed, InvalidResponse
from bot.api.http import CallSafety, HttpTransport
from bot.api.keys import KeyPool
from bot.api.models_common import read_model
from bot.api.models_diffusion import (
    ControlNetRequest,
    DiffusionFetchRequest,
    DiffusionResponse,
    DiffusionUpscaleRequest,
    Img2ImgRequest,
    Txt2ImgRequest,
)
from bot.api.settings import ControlnetImageField
from bot.api.validation import RequestModel

PREFIX = "/diff"
CONTROL_IMAGE = "control_image"
CONTROLNET_IMAGE = "controlnet_image"
CREATE = CallSafety.CREATE
_CONTROL_WORDS = re.compile(r"control(?:net)?_image", re.IGNORECASE)
log = logging.getLogger("bot.api")


class DiffusionClient:
    """Diffusion endpoints. Every answer returned has status ``success`` or a pending status
    (``processing``); an error status raises :class:`DiffusionFailed`. Generation calls are
    never repeated once sent, but for one: a controlnet call refused (400) for the name of its
    control image, which is sent again under the other name when ``control_field`` is ``auto``
    (the name that works is kept for the process and logged once;
    docs/provider.md#controlnet-image). ``fetch`` is retried (see :mod:`bot.api.http`)."""

    def __init__(
        self,
        transport: HttpTransport,
        keys: KeyPool,
        control_field: ControlnetImageField = "auto",
    ):
        self._transport = transport
        self.keys = keys
        self._learn_control_field = control_field == "auto"
        self.control_field = CONTROL_IMAGE if control_field == "auto" else control_field
        """The name the control image is sent under."""

    async def txt2img(self, request: Txt2ImgRequest, *, key: str = "") -> DiffusionResponse:
        """Generate from text."""
        return await self._call("txt2img", request, CallSafety.CREATE, key)

    async def img2img(self, request: Img2ImgRequest, *, key: str = "") -> DiffusionResponse:
        """Generate from an initial image."""
        return await self._call("img2img", request, CallSafety.CREATE, key)

    async def upscale(
        self, request: DiffusionUpscaleRequest, *, key: str = ""
    ) -> DiffusionResponse:
        """Upscale an image (``output`` holds the one result URL)."""
        return await self._call("upscale", request, CallSafety.CREATE, key)

    async def controlnet(self, request: ControlNetRequest, *, key: str = "") -> DiffusionResponse:
        """Controlled generation; usually answers ``processing`` with an ``eta``."""
        body = request.to_body()
        image = body.pop(CONTROL_IMAGE, None)
        if image is None:
            return await self._send("controlnet", body, CallSafety.CREATE, key)
        try:
            return await self._send("controlnet", {**body, self.control_field: image}, CREATE, key)
        except BadRequest as error:
            if not self._learn_control_field or not _CONTROL_WORDS.search(error.provider_message):
                raise
            refused = error.provider_message
        other = CONTROLNET_IMAGE if self.control_field == CONTROL_IMAGE else CONTROL_IMAGE
        answer = await self._send("controlnet", {**body, other: image}, CREATE, key)
        log.warning(
            "the provider refused controlnet's %s (%s); sending %s from now on",
            self.control_field,
            refused,
            other,
        )
        self.control_field = other
        return answer

    async def fetch(self, generation_id: int, *, key: str = "") -> DiffusionResponse:
        """The queued result of a generation (no new images are made)."""
        request = DiffusionFetchRequest(id=generation_id)
        return await self._call("fetch", request, CallSafety.READ, key)

    async def wait(
        self,
        target: int | DiffusionResponse,
        *,
        timeout: float = 300.0,
        poll_interval: float = 2.0,
        max_poll_interval: float = 15.0,
        key: str = "",
    ) -> DiffusionResponse:
        """Fetch until images are ready and return that answer.

        ``target`` is a generation id or an answer (returned at once when already ready).
        The first fetch happens after the answer's ``eta`` (else ``poll_interval``), later
        ones after each fetch's ``eta`` or ``poll_interval``, never more than
        ``max_poll_interval`` apart. Raises :class:`ApiTimeout` after ``timeout`` seconds.
        """
        current = target if isinstance(target, DiffusionResponse) else None
        generation_id = current.id if current is not None else target
        if current is not None and current.is_ready:
            return current
        if not isinstance(generation_id, int):
            raise InvalidResponse("diffusion answer has no id to fetch")
        deadline = time.monotonic() + timeout
        delay = self._delay(current, poll_interval, max_poll_interval)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            await asyncio.sleep(min(delay, remaining))
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    current = await self.fetch(generation_id, key=key)
            except TimeoutError:
                break
            if current.is_ready:
                return current
            delay = self._delay(current, poll_interval, max_poll_interval)
        raise ApiTimeout(f"diffusion {generation_id} not ready after {timeout:g} s")

    @staticmethod
    def _delay(answer: DiffusionResponse | None, default: float, ceiling: float) -> float:
        eta = answer.eta if answer is not None else None
        chosen = eta if eta is not None and eta >= 0 else default
        return min(chosen, ceiling)

    async def _call(
        self, endpoint: str, request: RequestModel, safety: CallSafety, key: str
    ) -> DiffusionResponse:
        return await self._send(endpoint, request.to_body(), safety, key)

    async def _send(
        self, endpoint: str, body: dict[str, Any], safety: CallSafety, key: str
    ) -> DiffusionResponse:
        path = f"{PREFIX}/{endpoint}"
        result = await self.keys.post(self._transport, path, body, safety=safety, key=key)
        if safety is CallSafety.CREATE:
            self.keys.observe(key, None, created=True)
        answer = read_model(DiffusionResponse, result.body, endpoint)
        if answer.is_failed:
            raise DiffusionFailed(answer.status, answer.message)
        return answer
