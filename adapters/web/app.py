"""The playground's aiohttp application: its routes, in one table."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from adapters.listener import body_limit
from adapters.web import admin, gallery, handlers, routes
from adapters.web.language import language_middleware, page_messages
from adapters.web.routes import ADAPTER, MULTIPART_OVERHEAD, UPLOAD_TIMEOUT, Serving


def _upload_route(largest_file: int) -> Callable[[web.Request], Awaitable[web.Response]]:
    limit = handlers.MAX_FILES_PER_REQUEST * (largest_file + MULTIPART_OVERHEAD)

    @body_limit(limit, timeout=UPLOAD_TIMEOUT)
    async def upload(request: web.Request) -> web.Response:
        return await handlers.upload(request)

    return upload


def build_app(adapter: Serving) -> web.Application:
    """The aiohttp application of ``adapter``'s playground."""
    app = web.Application(middlewares=[language_middleware, routes.access_middleware])
    app[ADAPTER] = adapter
    app.on_response_prepare.append(routes.on_prepare)
    app.on_shutdown.append(routes.close_streams)
    app.on_cleanup.append(routes.cancel_handlers)
    app.router.add_get("/", routes.index)
    app.router.add_get("/static/{name}", routes.static)
    app.router.add_get("/api/commands", routes.commands)
    app.router.add_get("/api/messages", page_messages)
    app.router.add_get("/api/saved-options", routes.saved_options)
    app.router.add_get("/api/history", routes.history)
    app.router.add_get("/api/events", routes.events)
    app.router.add_post("/api/command", handlers.command)
    app.router.add_post("/api/message", handlers.message)
    app.router.add_post("/api/button", handlers.button)
    app.router.add_post("/api/edit", handlers.edit)
    app.router.add_post("/api/modal", handlers.modal)
    app.router.add_post("/api/upload", _upload_route(handlers.largest_upload(adapter.playground)))
    app.router.add_get("/admin", admin.page)
    app.router.add_get("/api/admin/overview", admin.overview)
    app.router.add_get("/api/admin/audit.jsonl", admin.export)
    app.router.add_post("/api/admin/moderation", admin.moderation)
    app.router.add_post("/api/admin/cancel", admin.cancel)
    app.router.add_get("/gallery", gallery.page)
    app.router.add_get("/api/gallery", gallery.results)
    app.router.add_get("/api/gallery/images/{job_id}", gallery.image)
    app.router.add_post("/api/gallery/form", gallery.form)
    app.router.add_get("/images/{key}/{name}", routes.image)
    app.router.add_get("/uploads/{id}/{name}", routes.upload_file)
    app.router.add_get("/downloads/{id}/{name}", routes.download)
    return app
