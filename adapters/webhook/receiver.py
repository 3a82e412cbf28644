"""The webhook receiver: an aiohttp server on ``[webhook] host:port``.

- ``POST <path>/<job_id>`` with header ``x-webhook-secret``: a task notification, handed to the
  tracker (which answers 401 for unknown jobs and wrong secrets, see
  :meth:`bot.jobs.tracker.Tracker.on_webhook`). Bodies above ``MAX_BODY_BYTES`` are refused.
- ``GET /media/<name>``: images re-hosted for the provider (:class:`bot.jobs.media.MediaHost`).

Secrets are never logged: access logging is off and errors log only the job id.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from bot.config import WebhookSettings
from bot.jobs.media import MediaHost

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024
SHUTDOWN_TIMEOUT = 2.0
SECRET_HEADER = "x-webhook-secret"

WebhookHandler = Callable[[str, str | None, bytes], Awaitable[int]]


class WebhookReceiver:
    """Serves the webhook path and the media host until stopped."""

    def __init__(
        self, settings: WebhookSettings, handler: WebhookHandler, media: MediaHost | None = None
    ) -> None:
        self.settings = settings
        self._handler = handler
        self._media = media
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    @property
    def path(self) -> str:
        """The webhook path prefix, normalised (``/webhooks/tasks``)."""
        return "/" + self.settings.path.strip("/")

    def app(self) -> web.Application:
        """The aiohttp application (also usable with aiohttp's test utilities)."""
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post(self.path + "/{job_id}", self._notification)
        app.router.add_get("/media/{name}", self._media_file)
        return app

    async def start(self) -> None:
        """Listen on ``host:port``."""
        runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.settings.host, self.settings.port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        log.info("webhook receiver listening on %s:%s", self.settings.host, self.port)

    async def stop(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _notification(self, request: web.Request) -> web.Response:
        job_id = request.match_info["job_id"]
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return web.Response(status=413)
        try:
            status = await self._handler(job_id, request.headers.get(SECRET_HEADER), body)
        except Exception:
            log.exception("webhook for job %s could not be handled", job_id)
            status = 500
        if status == 401:
            log.warning("refused a webhook for job %r (unknown job or wrong secret)", job_id[:32])
        return web.Response(status=status)

    async def _media_file(self, request: web.Request) -> web.Response:
        hosted = self._media.get(request.match_info["name"]) if self._media else None
        if hosted is None:
            return web.Response(status=404)
        return web.Response(body=hosted.data, content_type=hosted.content_type)
