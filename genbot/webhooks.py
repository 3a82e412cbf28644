"""Where the provider sends job webhooks, as ``genbot run`` wires them and ``genbot doctor``
checks them (apart from :mod:`genbot.compose`, so the doctor does not load the whole core)."""

from __future__ import annotations

import logging

from bot.api import InvalidRequest
from bot.api.validation import check_webhook_address
from bot.kernel import CoreSettings

log = logging.getLogger(__name__)


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
