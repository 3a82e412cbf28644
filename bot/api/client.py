"""The facade the rest of genbot holds: one session, three family clients."""

from __future__ import annotations

import random
from types import TracebackType

from bot.api.chat import ChatClient
from bot.api.diffusion import DiffusionClient
from bot.api.http import HttpTransport, RetryPolicy
from bot.api.keys import KeyPool
from bot.api.ratelimit import RateLimitPolicy, RequestPacer, SharedPacing
from bot.api.settings import ApiSettings
from bot.api.tasks import TaskClient


class ProviderClient:
    """Everything the provider offers, configured from ``[api]``.

    ``async with ProviderClient(settings.api) as api: await api.tasks.imagine(...)``. The
    aiohttp session is created on first use and closed by :meth:`aclose` (or leaving the
    ``async with``). ``allow_insecure_webhooks`` lets webhook addresses on loopback use http
    and any port; it is meant for tests and local demos, never for production. ``retry`` and
    ``rate_limits`` override the retry and rate-limit policies (tests); ``rng`` draws retry
    delays and keys (tests). ``shared_pacing``
    counts chat requests against ``[api] chat_requests_per_*`` over every process sharing it.
    """

    def __init__(
        self,
        settings: ApiSettings,
        *,
        retry: RetryPolicy | None = None,
        rate_limits: RateLimitPolicy | None = None,
        allow_insecure_webhooks: bool = False,
        rng: random.Random | None = None,
        shared_pacing: SharedPacing | None = None,
    ) -> None:
        self.settings = settings
        self.transport = HttpTransport(settings, retry=retry, rate_limits=rate_limits, rng=rng)
        self.keys = KeyPool(settings.pool(), out_seconds=settings.key_out_seconds, rng=rng)
        """The provider keys and their state (:mod:`bot.api.keys`)."""
        pacer = RequestPacer(
            settings.chat_requests_per_minute,
            settings.chat_requests_per_day,
            shared=shared_pacing,
        )
        self.chat = ChatClient(self.transport, self.keys, settings.plan, pacer)
        self.tasks = TaskClient(
            self.transport,
            self.keys,
            allow_insecure_webhooks=allow_insecure_webhooks,
            upstream_cdn_hosts=settings.upstream_cdn_hosts,
        )
        self.diffusion = DiffusionClient(self.transport, self.keys, settings.controlnet_image_field)

    async def __aenter__(self) -> ProviderClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the shared HTTP session."""
        await self.transport.aclose()
