"""Rendering one streamed answer on a bare surface, for the renderer's tests: the renderer on
an outbox of its own over ``surface``, reading a script of deltas (:class:`PumpedDeltas`)."""

from __future__ import annotations

from collections.abc import AsyncIterable

from bot.features.chat.renderer import RenderResult, StreamEnd, StreamRenderer
from bot.kernel import Event, Place, Surface, SurfaceRegistry
from bot.outbox import Clock, Outbox, Pacer
from tests.fakes.deltas import PumpedDeltas


async def render_stream(
    deltas: AsyncIterable[str | StreamEnd],
    surface: Surface,
    place: Place,
    pacer: Pacer,
    *,
    origin: Event | None = None,
    placeholder: str | None = None,
    clock: Clock | None = None,
    final_timeout: float = 60.0,
) -> RenderResult:
    """Render one streamed answer (``deltas``, as they come) on ``surface``, paced by
    ``pacer``; see :class:`StreamRenderer`."""
    renderer = StreamRenderer(
        Outbox(SurfaceRegistry([surface]), pacer),
        place,
        origin=origin,
        placeholder=placeholder,
        clock=clock,
        final_timeout=final_timeout,
    )
    pumped = PumpedDeltas(deltas)
    try:
        return await renderer.render(pumped)
    finally:
        await pumped.aclose()
