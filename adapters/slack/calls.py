"""Slack Web API calls bounded in time, with Slack's answers as the core's surface errors:
``ratelimited`` (HTTP 429) is :class:`~bot.kernel.surface.RateLimited` with its ``Retry-After``, any
other refusal :class:`~adapters.slack.errors.SlackRefused` with Slack's error code, a network
failure or a timeout a :class:`~bot.kernel.surface.SurfaceError` naming the method."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.kernel import RateLimited, SurfaceError

from .errors import SlackRefused

T = TypeVar("T")

TOKEN_GONE = frozenset({"token_revoked", "invalid_auth", "account_inactive", "token_expired"})
"""Refusals meaning the token used is no longer good."""


class SlackCalls:
    """Makes calls for the surface; ``on_token_gone`` hears of a token Slack no longer
    accepts (so the token is looked up again next time)."""

    def __init__(self, timeout: float, on_token_gone: Callable[[], None] | None = None) -> None:
        self.timeout = timeout
        self._on_token_gone = on_token_gone

    async def __call__(self, method: str, call: Awaitable[T]) -> T:
        try:
            async with asyncio.timeout(self.timeout):
                return await call
        except SlackApiError as error:
            response = error.response
            code = str(response.get("error"))
            if response.status_code == 429 or code == "ratelimited":
                raise RateLimited(retry_after(response.headers)) from None
            if code in TOKEN_GONE and self._on_token_gone is not None:
                self._on_token_gone()
            raise SlackRefused(method, code) from None
        except (SlackClientError, aiohttp.ClientError) as error:
            raise SurfaceError(f"Slack {method} failed: {type(error).__name__}") from None
        except TimeoutError:
            raise SurfaceError(f"Slack did not answer {method} in {self.timeout:g}s") from None


def retry_after(headers: Any) -> float:
    """Seconds from a ``Retry-After`` header (1 when missing or unreadable)."""
    value = None
    if isinstance(headers, Mapping):
        value = headers.get("Retry-After") or headers.get("retry-after")
    try:
        return max(float(value), 0.0) if value is not None else 1.0
    except (TypeError, ValueError):
        return 1.0


Call = Callable[[str, Awaitable[Any]], Awaitable[Any]]
