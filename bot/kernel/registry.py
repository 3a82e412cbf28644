"""The adapters' surfaces, by platform name."""

from __future__ import annotations

from collections.abc import Iterable

from bot.kernel.surface import Surface


class SurfaceRegistry:
    """The adapters' surfaces, by platform name; the core answers on each platform through
    its surface, through the outbox (:class:`bot.outbox.Outbox`), which counts every write."""

    def __init__(self, surfaces: Iterable[Surface] = ()) -> None:
        self._surfaces: dict[str, Surface] = {surface.platform: surface for surface in surfaces}

    def get(self, platform: str) -> Surface:
        """The surface of ``platform``; ``KeyError`` when no adapter for it is attached."""
        return self._surfaces[platform]

    def __contains__(self, platform: object) -> bool:
        return platform in self._surfaces

    def platforms(self) -> tuple[str, ...]:
        """The platforms with an attached surface."""
        return tuple(self._surfaces)
