"""The webhook receiver: an HTTP listener on ``[webhook] host:port`` (see
:mod:`adapters.listener` for its timeouts and caps).

- ``POST <path>/<job_id>`` with header ``x-webhook-secret``: a task notification. The job id
  and the secret are checked first (:meth:`TaskNotices.webhook_job`); only then is the body
  read (at most ``MAX_BODY_BYTES``) and handed over (:meth:`TaskNotices.on_webhook`). An
  unknown job or a wrong secret gets 401 without a byte of the body being read: the same
  answer for both, so it never tells which job ids exist (why 401:
  docs/provider.md#webhook-refusal).
- ``POST /`` and ``POST <path>`` with header ``x-webhook-secret``: a notification sent to
  genbot's bare address (a provider that refuses or drops the job in the address, see
  :mod:`bot.features.jobs.webhook_addresses`). A request without the secret header gets 401 before a
  byte of its body is read; else the body is read (bounded), and the job of the task it names,
  authenticated by the secret, is asked for (:meth:`TaskNotices.webhook_task_job`); a body
  naming no known task of that secret gets 401.
- ``GET /media/<name>``: images re-hosted for the provider
(:class:`bot.kernel.media_host.MediaHost`).

Secrets are never logged: access logging is off, and refusals are counted and logged with a
reason only, at most once a minute.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from adapters.listener import Listener, ListenerLimits, answer_and_close, body_limit, refused
from adapters.webhook.ports import NotifiedJob, TaskNotices
from bot.kernel import MediaHost, WebhookSettings, metrics

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024
SECRET_HEADER = "x-webhook-secret"
LIMITS = ListenerLimits(max_body_bytes=MAX_BODY_BYTES, body_timeout=30.0)


class WebhookReceiver:
    """Serves the webhook path and the media host until stopped."""

    def __init__(
        self,
        settings: WebhookSettings,
        target: TaskNotices[Any],
        media: MediaHost | None = None,
        limits: ListenerLimits = LIMITS,
    ) -> None:
        self.settings = settings
        self._target = target
        self._media = media
        self.listener = Listener(self.app(), "webhook receiver", limits)

    @property
    def path(self) -> str:
        """The webhook path prefix, normalised (``/webhooks/tasks``)."""
        return "/" + self.settings.path.strip("/")

    @property
    def port(self) -> int | None:
        """The port listened on, once started."""
        return self.listener.port

    def app(self) -> web.Application:
        """The aiohttp application (also usable with aiohttp's test utilities)."""
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post(self.path + "/{job_id}", self._notification)
        app.router.add_post("/", self._bare_notification)
        if self.path != "/":
            app.router.add_post(self.path, self._bare_notification)
        app.router.add_get("/media/{name}", self._media_file)
        return app

    async def start(self) -> None:
        """Listen on ``host:port``."""
        await self.listener.start(self.settings.host, self.settings.port)
        log.info("webhook receiver listening on %s:%s", self.settings.host, self.port)

    async def stop(self) -> None:
        """Stop listening."""
        await self.listener.stop()

    @body_limit(MAX_BODY_BYTES)
    async def _notification(self, request: web.Request) -> web.Response:
        job_id = request.match_info["job_id"]
        job = await self._target.webhook_job(job_id, request.headers.get(SECRET_HEADER))
        if job is None:
            return await self._refuse(request, "unknown job or wrong secret")
        return await self._hand_over(job, await request.read())

    @body_limit(MAX_BODY_BYTES)
    async def _bare_notification(self, request: web.Request) -> web.Response:
        secret = request.headers.get(SECRET_HEADER)
        if not secret:
            return await self._refuse(request, "no secret")
        body = await request.read()
        job = await self._target.webhook_task_job(body, secret)
        if job is None:
            return await self._refuse(request, "no known task or wrong secret")
        return await self._hand_over(job, body)

    async def _refuse(self, request: web.Request, reason: str) -> web.Response:
        refused(request, reason)
        metrics.webhook_answered(401)
        return await answer_and_close(request, web.Response(status=401))

    async def _hand_over(self, job: NotifiedJob, body: bytes) -> web.Response:
        try:
            status = await self._target.on_webhook(job, body)
        except Exception:
            log.exception("webhook for job %s could not be handled", job.id)
            status = 500
        metrics.webhook_answered(status)
        return web.Response(status=status)

    async def _media_file(self, request: web.Request) -> web.StreamResponse:
        hosted = await self._media.get(request.match_info["name"]) if self._media else None
        if hosted is None:
            return web.Response(status=404)
        headers = {"Content-Type": hosted.content_type, "X-Content-Type-Options": "nosniff"}
        return web.Response(body=hosted.data, headers=headers)
