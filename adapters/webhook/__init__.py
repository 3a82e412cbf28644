"""The webhook receiver: provider task notifications and re-hosted media over HTTP."""

from __future__ import annotations

from adapters.webhook.receiver import WebhookReceiver, WebhookTarget
from bot.jobs import JobEngines, webhook_base_url
from bot.kernel import CoreSettings


def webhook_receiver(settings: CoreSettings, jobs: JobEngines) -> WebhookReceiver | None:
    """The receiver for ``jobs``' tracker and media host, or None when webhooks are off
    (``[webhook] public_url`` empty or not an address the provider accepts)."""
    if webhook_base_url(settings) is None:
        return None
    return WebhookReceiver(settings.webhook, jobs.tracker, jobs.media_host)


__all__ = ["WebhookReceiver", "WebhookTarget", "webhook_receiver"]
