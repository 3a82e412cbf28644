"""What a provider's HTTP answer means: the typed error of a non-2xx status (see
:mod:`bot.api.errors`) and the provider's own short explanation in its body."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pydantic_core

from bot.api.errors import (
    ApiError,
    AuthenticationError,
    BadRequest,
    PermissionDenied,
    ProviderRateLimited,
    ServerError,
    UnexpectedStatus,
)
from bot.api.ratelimit import retry_after_seconds


def provider_message(body: Any, raw: bytes = b"") -> str:
    """The provider's own short explanation in an error body, if any (the body's shape is not
    documented: docs/provider.md#error-body)."""
    if isinstance(body, dict):
        for key in ("message", "messege", "error", "detail", "msg"):
            value = body.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if isinstance(value, str) and value.strip():
                return _one_line(value)
    if body is None and raw:
        return _one_line(raw.decode("utf-8", errors="replace"))
    return ""


REASON_LIMIT = 200
"""Characters of a provider's undocumented reason genbot shows a user, at most."""
HIDDEN = "[hidden]"


def shown_reason(text: str, secrets: Iterable[str] = (), limit: int = REASON_LIMIT) -> str:
    """A provider's own reason, safe to show a user: on one line, every secret in ``secrets``
    (the request's key, its webhook secret) replaced by ``[hidden]``, at most ``limit``
    characters."""
    for secret in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return _one_line(text, limit)


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def parse_json(raw: bytes) -> Any:
    """The parsed JSON of a body, or ``None`` when it is empty or not JSON. Read with
    pydantic_core's parser (a multi_fetch answer in about two thirds of ``json``'s time: a
    tracker reads thousands of records a second, issue 32); a body only ``json`` reads (a
    byte order mark, UTF-16, a lone surrogate escape) is read by ``json``, as before."""
    if not raw.strip():
        return None
    try:
        return pydantic_core.from_json(raw)
    except ValueError:
        pass
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


def error_for_status(status: int, raw: bytes, retry_after: str | None = None) -> ApiError:
    """The typed error for a non-2xx answer (``retry_after``: its ``Retry-After`` header)."""
    body = parse_json(raw)
    message = provider_message(body, raw)
    if status == 429:
        return ProviderRateLimited(retry_after_seconds(retry_after), message)
    if status == 401:
        return AuthenticationError(message)
    if status == 400:
        return BadRequest(message, body)
    if status == 403:
        return PermissionDenied(message)
    if 500 <= status < 600:
        return ServerError(status, message)
    return UnexpectedStatus(status, message)
