"""Family C client: diffusion generation, upscale, controlnet, fetch and wait (docs/provider.md,
"Diffusion")."""

from __future__ import annotations

import asyncio
import time

from bot.api.errors import ApiTimeout, DiffusionFailed, InvalidResponse
from bot.api.http import AuthStyle, CallSafety, HttpTransport
from bot.api.models_common import read_model
from bot.api.models_diffusion import (
    ControlNetRequest,
    DiffusionFetchRequest,
    DiffusionResponse,
    DiffusionUpscaleRequest,
    Img2ImgRequest,
    Txt2ImgRequest,
)
from bot.api.validation import RequestModel

PREFIX = "/diff"


class DiffusionClient:
    """Diffusion endpoints. Every answer returned has status ``success`` or a pending status
    (``processing``); an error status raises :class:`DiffusionFailed`. Generation calls are
    never repeated once sent; ``fetch`` is retried (see :mod:`bot.api.http`)."""

    def __init__(self, transport: HttpTransport) -> None:
        self._transport = transport

    async def txt2img(self, request: Txt2ImgRequest) -> DiffusionResponse:
        """Generate from text."""
        return await self._call("txt2img", request, CallSafety.CREATE)

    async def img2img(self, request: Img2ImgRequest) -> DiffusionResponse:
        """Generate from an initial image."""
        return await self._call("img2img", request, CallSafety.CREATE)

    async def upscale(self, request: DiffusionUpscaleRequest) -> DiffusionResponse:
        """Upscale an image (``output`` holds the one result URL)."""
        return await self._call("upscale", request, CallSafety.CREATE)

    async def controlnet(self, request: ControlNetRequest) -> DiffusionResponse:
        """Controlled generation; usually answers ``processing`` with an ``eta``."""
        return await self._call("controlnet", request, CallSafety.CREATE)

    async def fetch(self, generation_id: int) -> DiffusionResponse:
        """The queued result of a generation (no new images are made)."""
        return await self._call("fetch", DiffusionFetchRequest(id=generation_id), CallSafety.READ)

    async def wait(
        self,
        target: int | DiffusionResponse,
        *,
        timeout: float = 300.0,
        poll_interval: float = 2.0,
        max_poll_interval: float = 15.0,
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
                    current = await self.fetch(generation_id)
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
        self, endpoint: str, request: RequestModel, safety: CallSafety
    ) -> DiffusionResponse:
        result = await self._transport.post(
            f"{PREFIX}/{endpoint}", request.to_body(), auth=AuthStyle.API_KEY, safety=safety
        )
        answer = read_model(DiffusionResponse, result.body, endpoint)
        if answer.is_failed:
            raise DiffusionFailed(answer.status, answer.message)
        return answer
