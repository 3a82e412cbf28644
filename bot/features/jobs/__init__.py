"""Image (family B) and diffusion (family C) jobs: features, the tracker, webhooks, delivery.

The composition root (:func:`genbot.compose.build_core`) wires everything with one call::

    jobs = build_job_engines(settings, store, provider, outbox)
    core = Router(surfaces, [*jobs.features, ...], conversations, [*jobs.services, ...],
                refs=Refs(store, open_channels))

``outbox`` should be the process's one :class:`~bot.outbox.Outbox` (its pacer shared with the
chat renderer); ``jobs.chat_jobs`` is the :class:`ChatJobs` handle for the chat engine's functions.
The provider client should be built with ``allow_insecure_webhooks`` equal to
``[webhook] allow_insecure_loopback``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from bot.api import InvalidRequest, ProviderClient
from bot.api.validation import check_webhook_address
from bot.features.jobs.cancel import JobCancel
from bot.features.jobs.chat_jobs import ChatJobs
from bot.features.jobs.describe import DescribeButtons
from bot.features.jobs.diffusion import DiffusionJobs
from bot.features.jobs.experience import Experience
from bot.features.jobs.images import ImageJobs
from bot.features.jobs.limits import Limits
from bot.features.jobs.messages import JobMessages
from bot.features.jobs.region_preview import PreviewButtons
from bot.features.jobs.starter import JobSpec, JobStarter, Submitted
from bot.features.jobs.tracking.retry import DeliveryRetry
from bot.features.jobs.tracking.ticker import ProgressTicker
from bot.features.jobs.tracking.tracker import Tracker
from bot.features.jobs.tracking.watch import JobWatch
from bot.features.jobs.upload_forms import UploadForms
from bot.features.jobs.webhook_secrets import WebhookSecrets
from bot.kernel import (
    CoreSettings,
    MediaFetcher,
    MediaHost,
    media_folder,
    provider_is_private,
    sealer_of,
)
from bot.outbox import Outbox
from bot.router import Feature, Lifecycle
from storage import Store

log = logging.getLogger(__name__)

__all__ = [
    "ChatJobs",
    "DeliveryRetry",
    "DescribeButtons",
    "DiffusionJobs",
    "ImageJobs",
    "JobCancel",
    "JobEngines",
    "JobMessages",
    "JobSpec",
    "JobStarter",
    "JobWatch",
    "Limits",
    "MediaFetcher",
    "MediaHost",
    "ProgressTicker",
    "Submitted",
    "Tracker",
    "build_job_engines",
    "webhook_base_url",
]


@dataclass
class JobEngines:
    """Every part of the job machinery, for the composition root and tests."""

    images: ImageJobs
    diffusion: DiffusionJobs
    tracker: Tracker
    media: MediaFetcher
    media_host: MediaHost | None
    delivery: JobMessages
    starter: JobStarter
    limits: Limits
    watch: JobWatch
    chat_jobs: ChatJobs
    cancel: JobCancel
    ticker: ProgressTicker
    describe: DescribeButtons
    upload_forms: UploadForms
    previews: PreviewButtons

    @property
    def features(self) -> list[Feature]:
        """The features to give the core."""
        return [
            self.images,
            self.diffusion,
            self.cancel,
            self.describe,
            self.upload_forms,
            self.previews,
        ]

    @property
    def services(self) -> list[Lifecycle]:
        """The services to give the core, in start order. The webhook receiver
        (``adapters.webhook``) is not one: the composition root starts it after these and stops
        it before them, so no webhook reaches a stopped tracker."""
        return [self.media, self.delivery.experience, self.tracker, self.ticker]


def webhook_base_url(settings: CoreSettings) -> str | None:
    """Where job webhooks go (``public_url`` + ``path``), or None when webhooks are off or the
    address is not one the provider accepts (https on 443; loopback http only when
    ``allow_insecure_loopback``)."""
    hook = settings.webhook
    if not hook.public_url.strip():
        return None
    base = hook.public_url.strip().rstrip("/") + "/" + hook.path.strip("/")
    try:
        check_webhook_address(
            "[webhook] public_url", base, allow_insecure=hook.allow_insecure_loopback
        )
    except InvalidRequest as error:
        log.warning("webhooks disabled, polling only: %s", error)
        return None
    return base


def build_job_engines(
    settings: CoreSettings,
    store: Store,
    provider: ProviderClient,
    outbox: Outbox,
    *,
    shards: str | None = None,
    clock: Callable[[], float] = time.time,
) -> JobEngines:
    """Build the job machinery: its :attr:`JobEngines.features` and
    :attr:`JobEngines.services` (media session, tracker — in start order) go to the core,
    :attr:`JobEngines.chat_jobs` to the chat engine.

    ``shards``: the platform shards this process runs, for
    the cluster's view; ``clock`` times polls, timeouts and delivery retries.
    """
    limits_settings = settings.limits
    watch = JobWatch(store)
    media = MediaFetcher(
        limits_settings.max_upload_bytes,
        allow_private=provider_is_private(settings.api.base_url),
    )
    webhook_base = webhook_base_url(settings)
    media_host = (
        MediaHost(
            settings.webhook.public_url.strip(),
            media_folder(settings.storage.path),
            max_total_bytes=settings.webhook.media_cache_mb * 1024 * 1024,
            max_bytes_per_owner=settings.webhook.media_cache_mb_per_user * 1024 * 1024,
        )
        if webhook_base is not None
        else None
    )
    experience = Experience(store, settings.api.diffusion_models)
    delivery = JobMessages(store, outbox, media, watch, clock=clock, experience=experience)
    limits = Limits(limits_settings)
    webhook_secrets = WebhookSecrets(sealer_of(settings.storage, settings.api), store)
    tracker = Tracker(
        store,
        provider,
        delivery,
        watch,
        limits_settings,
        webhook_secrets,
        platforms=outbox.platforms,
        shards=lambda: shards,
        webhooks=webhook_base is not None,
        clock=clock,
    )
    starter = JobStarter(
        store,
        outbox,
        limits,
        delivery,
        watch,
        tracker.submitted,
        webhook_secrets,
        webhook_base=webhook_base,
        media_host=media_host,
        max_upload_bytes=limits_settings.max_upload_bytes,
        upstream_cdn_hosts=settings.api.upstream_cdn_hosts,
    )
    images = ImageJobs(starter, provider, media, store)
    diffusion = DiffusionJobs(starter, provider, limits_settings, clock, models=experience.models)
    chat_jobs = ChatJobs(images, watch)
    return JobEngines(
        images,
        diffusion,
        tracker,
        media,
        media_host,
        delivery,
        starter,
        limits,
        watch,
        chat_jobs,
        JobCancel(store, outbox, delivery, watch),
        ProgressTicker(
            store, delivery, owner=store.process_id, every=limits_settings.progress_tick_seconds
        ),
        DescribeButtons(starter, provider, store),
        UploadForms(starter, images),
        PreviewButtons(starter, images, media),
    )
