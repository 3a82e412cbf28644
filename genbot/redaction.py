"""No secret is ever written: every configured secret is replaced in what genbot logs and
prints."""

from __future__ import annotations

import logging
from urllib.parse import unquote, urlsplit

from genbot.settings import Settings

REDACTED = "[redacted]"


class RedactSecrets(logging.Filter):
    """Replaces every configured secret in a record's final message (belt and braces: genbot
    never logs secrets on purpose, but libraries may echo a URL or header). Exception text and
    tracebacks are redacted by :class:`RedactingFormatter`."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact(message, self.secrets)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


class RedactingFormatter(logging.Formatter):
    """A text formatter whose whole output — message, exception text, traceback, stack — has
    every configured secret replaced."""

    def __init__(self, fmt: str, secrets: list[str]) -> None:
        super().__init__(fmt)
        self.secrets = secrets

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record), self.secrets)


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every secret (of 4 characters or more) replaced by ``[redacted]``."""
    for secret in sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def settings_secrets(settings: Settings) -> list[str]:
    """Every secret value in ``settings``."""
    return [
        settings.api.key.get_secret_value(),
        settings.discord.token.get_secret_value(),
        settings.slack.bot_token.get_secret_value(),
        settings.slack.app_token.get_secret_value(),
        settings.slack.signing_secret.get_secret_value(),
        settings.slack.client_secret.get_secret_value(),
        settings.web.access_token.get_secret_value(),
        *storage_url_secrets(settings.storage.url.get_secret_value()),
    ]


def storage_url_secrets(url: str) -> list[str]:
    """The PostgreSQL address and its password, when there is one."""
    if not url.strip():
        return []
    try:
        password = urlsplit(url.strip()).password
    except ValueError:
        password = None
    return [url.strip(), *([unquote(password), password] if password else [])]
