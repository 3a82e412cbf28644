"""A :class:`bot.kernel.surface.Surface` that counts the core's writes to a platform.

The composition (:func:`bot.assembly.build_core`) wraps every attached surface in a
:class:`MeteredSurface` before the :class:`bot.kernel.registry.SurfaceRegistry` holds it, so every
write the core makes (job messages, streamed answers, ephemeral replies, forms, typing, threads) is
counted in ``genbot_platform_writes_total`` by platform and method, and every
:class:`bot.kernel.surface.RateLimited` a surface raises — a 429 left after the adapter's own
retries — in ``genbot_platform_rate_limited_total``. Everything else (``download``, ``posted``,
``command_names`` and any adapter extra) passes straight through.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from bot.kernel import (
    Attachment,
    Event,
    MessageRef,
    Modal,
    OutMessage,
    Place,
    RateLimited,
    Surface,
    SurfaceLimits,
    metrics,
)

T = TypeVar("T")


class MeteredSurface:
    """``surface`` with its writes counted (see the module docstring)."""

    def __init__(self, surface: Surface) -> None:
        self.inner = surface

    @property
    def platform(self) -> str:
        return self.inner.platform

    @platform.setter
    def platform(self, value: str) -> None:
        self.inner.platform = value

    @property
    def limits(self) -> SurfaceLimits:
        return self.inner.limits

    @limits.setter
    def limits(self, value: SurfaceLimits) -> None:
        self.inner.limits = value

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def _counted(self, method: str, call: Callable[[], Awaitable[T]]) -> T:
        metrics.platform_write(self.inner.platform, method)
        try:
            return await call()
        except RateLimited:
            metrics.platform_rate_limited(self.inner.platform, method)
            raise

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        return await self._counted("send", lambda: self.inner.send(place, message, origin=origin))

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        await self._counted("edit", lambda: self.inner.edit(ref, message))

    async def send_ephemeral(self, origin: Event, text: str) -> None:
        await self._counted("send_ephemeral", lambda: self.inner.send_ephemeral(origin, text))

    async def open_modal(self, origin: Event, modal: Modal) -> None:
        await self._counted("open_modal", lambda: self.inner.open_modal(origin, modal))

    async def typing(self, place: Place) -> None:
        await self._counted("typing", lambda: self.inner.typing(place))

    async def start_thread(self, ref: MessageRef, name: str) -> Place:
        return await self._counted("start_thread", lambda: self.inner.start_thread(ref, name))

    async def download(self, attachment: Attachment) -> bytes:
        return await self.inner.download(attachment)
