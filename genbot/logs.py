"""Logging for the genbot process: readable lines, and no secret ever written."""

from __future__ import annotations

import logging

from genbot.jsonlog import JsonFormatter
from genbot.redaction import RedactingFormatter, RedactSecrets, settings_secrets
from genbot.settings import Settings

TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def configure_logging(
    settings: Settings, verbose: bool, *, quiet: bool = False, log_format: str | None = None
) -> None:
    """Log to stderr at INFO (DEBUG when ``verbose``, WARNING when ``quiet``), with secrets
    redacted, as text or as JSON lines (``log_format``, else ``[logging] format``)."""
    handler = logging.StreamHandler()
    if (log_format or settings.logging.format) == "json":
        handler.setFormatter(JsonFormatter(settings_secrets(settings)))
    else:
        handler.setFormatter(RedactingFormatter(TEXT_FORMAT, settings_secrets(settings)))
    handler.addFilter(RedactSecrets(settings_secrets(settings)))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    logging.getLogger("discord").setLevel(logging.INFO if verbose else logging.WARNING)
