"""No secret is ever written: what genbot logs and prints has every configured secret replaced,
and every secret learned while running too — Slack tokens (``xoxb-…``, rotated ``xoxe.xoxb-…``,
refresh tokens ``xoxe-1-…``, app tokens ``xapp-…``), Discord bot tokens, ``Authorization``
values, and the values of keys that always hold a secret (an OAuth ``code``, ``client_secret``,
``access_token``, ``refresh_token``, a webhook secret, a cookie …) in the forms libraries print
them: ``key=value``, ``'key': 'value'``, ``"key": "value"`` and ``'key': ['value']``.

:func:`install_record_redaction` redacts every log record as it is made, so no logger — genbot's,
slack_sdk's, slack_bolt's, aiohttp's, discord.py's, psycopg's — and no handler, the root's or one
a library adds, ever sees the secret."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from genbot.settings import Settings

REDACTED = "[redacted]"
SECRET_KEYS = (
    "code",
    "client_secret",
    "access_token",
    "refresh_token",
    "bot_token",
    "bot_refresh_token",
    "user_token",
    "user_refresh_token",
    "app_token",
    "token",
    "signing_secret",
    "webhook_secret",
    "x-webhook-secret",
    "secret_key",
    "secret_key_previous",
    "api_key",
    "password",
    "authorization",
    "cookie",
    "set-cookie",
)
"""Keys whose value is a secret wherever it is printed (matched without regard to case)."""
MIN_VALUE = 6
"""A key's value shorter than this is left alone (no secret is that short: ``code=1`` is not
an OAuth code)."""

SHORT_SECRET = 8
"""A configured secret shorter than this (a weak ``[api] key`` such as ``test``, an
``access_token`` refused as too short) may be an ordinary word: it is replaced only where a value
is printed — after ``=`` or ``:``, inside quotes, after ``Bearer``/``Basic``/``Token`` — never
as a word of a sentence, which it would blank ("too [redacted]") and, blanked, point at."""

_KEYS = "|".join(re.escape(key) for key in sorted(SECRET_KEYS, key=len, reverse=True))
_TOKENS = re.compile(
    r"\b(?P<kind>xox[a-z](?:\.xox[a-z])?|xapp)-[A-Za-z0-9-]{6,}"
    r"|\b[A-Za-z0-9_-]{24,}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}"
    r"|\b(?P<scheme>Bearer|Basic) +[A-Za-z0-9._~+/=-]{16,}"
)
_QUOTED = re.compile(
    rf"""(?ix)(?P<key>(?<![\w-])(?P<q>\\?["'])(?:{_KEYS})(?P=q)\s*:\s*\[?\s*)
    (?P<v>\\?["'])(?P<value>(?:(?!(?P=v)).){{{MIN_VALUE},}}?)(?P=v)"""
)
_BARE = re.compile(rf"(?i)(?P<key>(?<![\w-])(?:{_KEYS})=)(?P<value>[^&\s'\"<>,;]{{{MIN_VALUE},}})")


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every one of ``secrets`` (of 4 characters or more; a short one only where it
    is printed as a value, :data:`SHORT_SECRET`) and every secret genbot recognizes on sight
    replaced by ``[redacted]``."""
    for secret in sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True):
        if len(secret) >= SHORT_SECRET:
            text = text.replace(secret, REDACTED)
        else:
            text = _as_value(secret).sub(lambda found: found["before"] + REDACTED, text)
    text = _TOKENS.sub(_token, text)
    text = _QUOTED.sub(_quoted, text)
    return _BARE.sub(lambda found: found["key"] + REDACTED, text)


def _as_value(secret: str) -> re.Pattern[str]:
    """Where a short ``secret`` stands as a printed value (see :data:`SHORT_SECRET`)."""
    before = r"""(?P<before>[=:]\s*|["']|\b(?:Bearer|Basic|Token|Bot) +)"""
    return re.compile(rf"{before}{re.escape(secret)}(?![\w-])")


def _token(found: re.Match[str]) -> str:
    """A recognized token, redacted but still saying what kind it was."""
    if found["kind"]:
        return f"{found['kind']}-{REDACTED}"
    if found["scheme"]:
        return f"{found['scheme']} {REDACTED}"
    return REDACTED


def _quoted(found: re.Match[str]) -> str:
    return f"{found['key']}{found['v']}{REDACTED}{found['v']}"


class Redactor:
    """:func:`redact` with a fixed list of configured secrets."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = list(secrets)

    def __call__(self, text: str) -> str:
        return redact(text, self.secrets)


class RedactingRecords:
    """A log record factory (:func:`logging.setLogRecordFactory`) wrapping ``base``: each
    record's message, exception text and stack are redacted as it is made."""

    def __init__(self, redactor: Redactor, base: Callable[..., logging.LogRecord]) -> None:
        self.redactor = redactor
        self.base = base

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.base(*args, **kwargs)
        redact_record(record, self.redactor)
        return record


def redact_record(record: logging.LogRecord, redactor: Redactor) -> None:
    """Replace ``record``'s message by its redacted text (arguments merged in), and fill its
    exception text and stack redacted, so that whichever formatter writes it writes no secret."""
    try:
        message = record.getMessage()
    except Exception:
        message = f"{record.msg} (arguments: {record.args!r})"
    record.msg, record.args = redactor(message), None
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redactor(record.exc_text)
    if record.stack_info:
        record.stack_info = redactor(record.stack_info)


def install_record_redaction(redactor: Redactor) -> None:
    """Make every log record of the process redacted by ``redactor`` (replacing the redaction
    an earlier call installed)."""
    base = logging.getLogRecordFactory()
    while isinstance(base, RedactingRecords):
        base = base.base
    logging.setLogRecordFactory(RedactingRecords(redactor, base))


class RedactingFormatter(logging.Formatter):
    """A text formatter whose whole output — message, exception text, traceback, stack — is
    redacted (belt and braces over :class:`RedactingRecords`)."""

    def __init__(self, fmt: str, secrets: list[str]) -> None:
        super().__init__(fmt)
        self.secrets = secrets

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record), self.secrets)


def settings_secrets(settings: Settings) -> list[str]:
    """Every secret value in ``settings``."""
    return [
        settings.api.key.get_secret_value(),
        *(entry.key.get_secret_value() for entry in settings.api.keys),
        settings.discord.token.get_secret_value(),
        settings.slack.bot_token.get_secret_value(),
        settings.slack.app_token.get_secret_value(),
        settings.slack.signing_secret.get_secret_value(),
        settings.slack.client_secret.get_secret_value(),
        settings.web.access_token.get_secret_value(),
        settings.storage.secret_key.get_secret_value(),
        settings.storage.secret_key_previous.get_secret_value(),
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
