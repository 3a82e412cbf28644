"""Logging for the genbot process: readable lines, and no secret ever written."""

from __future__ import annotations

import logging

from genbot.jsonlog import JsonFormatter
from genbot.redaction import (
    RedactingFormatter,
    Redactor,
    install_record_redaction,
    settings_secrets,
)
from genbot.settings import Settings

TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def configure_logging(
    settings: Settings, verbose: bool, *, quiet: bool = False, log_format: str | None = None
) -> None:
    """Log to stderr at INFO (DEBUG when ``verbose``, WARNING when ``quiet``), as text or as
    JSON lines (``log_format``, else ``[logging] format``), every record of every logger
    redacted as it is made (:mod:`genbot.redaction`)."""
    secrets = settings_secrets(settings)
    install_record_redaction(Redactor(secrets))
    handler = logging.StreamHandler()
    if (log_format or settings.logging.format) == "json":
        handler.setFormatter(JsonFormatter(secrets))
    else:
        handler.setFormatter(RedactingFormatter(TEXT_FORMAT, secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    logging.getLogger("discord").setLevel(logging.INFO if verbose else logging.WARNING)
