"""The one way a job starts, shared by commands, buttons, forms and chat tools.

1. caps and budget (:class:`~bot.jobs.limits.Limits`);
2. the job row, committed in status ``creating`` (a derivative through
   ``create_or_get_derivative``, so a second press finds the first job instead);
3. the progress message, linked to the job;
4. the provider's create call, made once and never repeated by genbot;
5. ``submitted`` (or ``finished`` / ``processing`` for diffusion) with the provider's id — or
   ``create_failed`` with the reason shown in the progress message;
6. the tracker takes over.

Attachments the provider must fetch are passed as their URLs; when ``[webhook] public_url`` is
set, images without a usable URL (none, or a chat-platform CDN link that describe and blend
refuse) are re-hosted on the webhook receiver (see :mod:`bot.jobs.media`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from bot.api.errors import ApiError
from bot.api.validation import UPSTREAM_CDN_HOSTS
from bot.core import SurfaceRegistry, UserError
from bot.events import Attachment, ButtonPress, Event, ModalSubmit
from bot.jobs import texts
from bot.jobs.delivery import Delivery
from bot.jobs.limits import Limits
from bot.jobs.media import MediaError, MediaHost, inspect_image
from bot.jobs.prompts import check_attachment
from bot.jobs.watch import JobWatch
from storage import Job, JobFamily, JobStatus, NewJob, Store

log = logging.getLogger(__name__)

MAX_DERIVATIVE_ATTEMPTS = 20
ATTACHMENT_TIMEOUT_SECONDS = 30.0
Webhook = tuple[str, str]


@dataclass(frozen=True)
class JobSpec:
    """What a flow wants started. ``action`` is the derivative key (with ``parent``): the
    button's action, plus a digest of the form's values for forms. ``webhook`` asks for a
    completion webhook when webhooks are configured (family B, except seed)."""

    family: JobFamily
    type: str
    prompt: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    parent: Job | None = None
    action: str | None = None
    webhook: bool = False


@dataclass(frozen=True)
class Submitted:
    """What the provider answered: its id for the job, our next status, fields to store and
    credits to record now (diffusion charges when it accepts a job)."""

    provider_id: str
    status: JobStatus = "submitted"
    fields: Mapping[str, Any] = field(default_factory=dict)
    credits: int = 0


Submit = Callable[[Job, Webhook | None], Awaitable[Submitted]]


class JobStarter:
    """Starts jobs (see the module docstring) and resolves what buttons and forms refer to."""

    def __init__(
        self,
        store: Store,
        surfaces: SurfaceRegistry,
        limits: Limits,
        delivery: Delivery,
        watch: JobWatch,
        on_submitted: Callable[[str], None],
        *,
        webhook_base: str | None = None,
        media_host: MediaHost | None = None,
        max_upload_bytes: int = 8 * 1024 * 1024,
    ) -> None:
        self.store = store
        self.surfaces = surfaces
        self.limits = limits
        self.delivery = delivery
        self.watch = watch
        self._on_submitted = on_submitted
        self.webhook_base = webhook_base
        self.media_host = media_host
        self.max_upload_bytes = max_upload_bytes

    async def start(self, event: Event, spec: JobSpec, submit: Submit) -> Job:
        """Start a job for ``event``'s user in ``event``'s place; returns it (``create_failed``
        when the provider refused: the progress message then says why). Raises
        :class:`UserError` for caps, budgets and repeated presses."""
        await self.limits.check_new_job(event.user, event.place.platform)
        job = await self._create_row(event, spec)
        try:
            job = await self.delivery.post_progress(job, event)
            hook = (self.webhook_url(job.id), job.webhook_secret) if job.webhook_secret else None
            outcome = await submit(job, hook)
        except ApiError as error:
            return await self._refused(job, error.user_message)
        except Exception:
            await self._refused(job, "genbot hit an unexpected error while starting it")
            raise
        moved = await self.store.transition(
            job.id,
            "creating",
            outcome.status,
            provider_id=outcome.provider_id,
            **outcome.fields,
        )
        if not moved:
            log.info("job %s changed before its creation was recorded (early webhook)", job.id)
        if outcome.credits:
            await self.store.add_usage(
                job.platform,
                job.requester_id,
                credits=outcome.credits,
                kind="credits",
                job_id=job.id,
            )
        self._on_submitted(job.id)
        return await self.store.get_job(job.id) or job

    def webhook_url(self, job_id: str) -> str:
        """The address the provider notifies for ``job_id``."""
        assert self.webhook_base is not None
        return f"{self.webhook_base}/{job_id}"

    async def _create_row(self, event: Event, spec: JobSpec) -> Job:
        place = event.place
        parameters = dict(spec.parameters)
        if place.is_dm:
            parameters["is_dm"] = True
        new = NewJob(
            family=spec.family,
            type=spec.type,
            requester_id=event.user.id,
            platform=place.platform,
            channel_id=place.channel_id,
            workspace_id=place.workspace_id,
            thread_id=place.thread_id,
            prompt=spec.prompt,
            parameters=parameters,
            parent_job_id=spec.parent.id if spec.parent is not None else None,
            action=spec.action if spec.parent is not None else None,
            webhook_secret=secrets.token_urlsafe(24)
            if spec.webhook and self.webhook_base
            else None,
        )
        if new.parent_job_id is None or new.action is None:
            return await self.store.create_job(new)
        for attempt in range(1, MAX_DERIVATIVE_ATTEMPTS + 1):
            key = new.action if attempt == 1 else f"{new.action}#{attempt}"
            job, created = await self.store.create_or_get_derivative(replace(new, action=key))
            if created:
                return job
            if job.status != "create_failed":
                raise UserError(_already(job))
        raise UserError("That button has failed too many times on this image; start a new job.")

    async def _refused(self, job: Job, reason: str) -> Job:
        await self.store.transition(job.id, "creating", "create_failed", error=reason)
        current = await self.store.get_job(job.id) or job
        await self.delivery.edit(current, texts.create_failed_text(current, reason), urgent=True)
        self.delivery.forget(job.id)
        self.watch.touch(job.id)
        return current

    async def pressed_job(self, event: ButtonPress | ModalSubmit) -> Job:
        """The job a button or form refers to (by its ``ref``, else by the pressed message),
        once ``event``'s user is allowed to use it; :class:`UserError` otherwise."""
        job = await self.store.get_job(event.ref) if event.ref else None
        if job is None and isinstance(event, ButtonPress):
            place = event.place
            job = await self.store.job_for_message(
                place.platform, place.channel_id, event.message_id
            )
        if job is None or job.platform != event.place.platform:
            raise UserError("genbot has no record of this image any more.")
        self.limits.check_press(event, job)
        return job

    async def attachment_url(self, event: Event, attachment: Attachment, *, cdn_ok: bool) -> str:
        """A URL the provider can fetch for ``attachment``: its own URL, or a re-hosted copy
        when it has none (or a CDN link and ``cdn_ok`` is false) and a media host exists."""
        check_attachment(attachment, self.max_upload_bytes)
        url = attachment.url.strip()
        needs_copy = not url or (not cdn_ok and is_upstream_cdn(url))
        if not needs_copy:
            return url
        if self.media_host is None:
            if not url:
                raise UserError(
                    f"{attachment.filename or 'That file'} has no link the image service could "
                    "fetch; attach it somewhere that gives a public https link."
                )
            return url
        data = attachment.data
        if data is None:
            surface = self.surfaces.get(event.place.platform)
            async with asyncio.timeout(ATTACHMENT_TIMEOUT_SECONDS):
                data = await surface.download(attachment)
        check_attachment(replace(attachment, size=len(data)), self.max_upload_bytes)
        try:
            image = inspect_image(data)
        except MediaError as error:
            raise UserError(f"{attachment.filename}: {error}.") from None
        return self.media_host.put(image)


def is_upstream_cdn(url: str) -> bool:
    """Whether ``url`` is on the chat platform's CDN (refused by describe and blend)."""
    host = (urlsplit(url).hostname or "").lower()
    return any(host == cdn or host.endswith("." + cdn) for cdn in UPSTREAM_CDN_HOSTS)


def _already(job: Job) -> str:
    if job.status == "posted":
        return "Already on it — that one is done; its result is posted above."
    if job.status in ("failed", "reporting", "failed_posted"):
        return "Already on it — that one was tried and failed; see the report above."
    return "Already on it — that job is running; its result will be posted here."
