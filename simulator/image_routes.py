"""The routes that serve the simulator's pictures while they are ready and not expired."""

from __future__ import annotations

import asyncio

from aiohttp import web

from simulator.images import IMAGE_PATHS, ImageSpec, render_png
from simulator.state import STATE


async def serve_image(request: web.Request) -> web.Response:
    """``GET /{images|host|permanent|diffusion}/{image_id}.png``: 404 before ready or expired."""
    state = request.app[STATE]
    stored = state.images.get(request.match_info["image_id"])
    now = state.now()
    if stored is None or now < stored.ready_at:
        return web.json_response({"error": {"message": "image not found"}}, status=404)
    if stored.expires_at is not None and now >= stored.expires_at:
        return web.json_response({"error": {"message": "image expired"}}, status=404)
    spec = stored.spec
    if state.config.plain_images:
        spec = ImageSpec(spec.width, spec.height, ())
    body = await asyncio.to_thread(render_png, spec)
    return web.Response(body=body, content_type="image/png")


def add_image_routes(app: web.Application) -> None:
    """Register the image-serving routes on ``app``."""
    for area in IMAGE_PATHS:
        app.router.add_get(f"/{area}/{{image_id}}.png", serve_image)
