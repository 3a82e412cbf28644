"""The HTTP layer shared by the three API families.

One :class:`HttpTransport` owns one lazily created ``aiohttp.ClientSession`` (so one per
process when the process has one :class:`~bot.api.client.ProviderClient`). It adds the right
authentication header per family, maps failures to :mod:`bot.api.errors`, fails over from
``base_url`` to ``backup_urls``, and retries only what is safe to repeat:

* :attr:`CallSafety.READ` calls (task fetch, multi_fetch, diffusion fetch) are retried with
  exponential backoff and full jitter on 5xx, connection errors and timeouts, failing over to
  the next address each time, bounded by :attr:`RetryPolicy.max_attempts` and
  :attr:`RetryPolicy.max_total_seconds`.
* :attr:`CallSafety.CREATE` calls (anything that may charge or start work, and non-streamed
  chat) are repeated, on the next address, only when the connection failed before the request
  was written (``ClientConnectorError``: refused, DNS, TLS; or a connect timeout). A reset, a
  read timeout or a 5xx after sending is raised at once: the provider may have acted on it.
* Chat streams are opened like CREATE calls and never resumed.
* A 429 is waited out and the call repeated on the same address, for every kind of call (a 429
  did nothing), within :class:`~bot.api.ratelimit.RateLimitPolicy` (see
  :mod:`bot.api.ratelimit`); a stream is only ever repeated before it was opened.

Keys are only ever placed in request headers; nothing here logs headers or bodies.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import aiohttp

from bot.api import metrics
from bot.api.errors import (
    ApiError,
    ApiTimeout,
    ConnectionFailed,
    InvalidResponse,
    ProviderRateLimited,
    ServerError,
    UnexpectedStatus,
)
from bot.api.ratelimit import RateLimitPolicy, RateLimitWaits
from bot.api.settings import ApiSettings
from bot.api.statuses import error_for_status, parse_json

log = logging.getLogger("bot.api")


class AuthStyle(Enum):
    """How a family authenticates (docs/provider.md, "Addresses and authentication")."""

    BEARER = "bearer"
    API_KEY = "api_key"


class CallSafety(Enum):
    """Whether a call may be repeated after it may have reached the provider."""

    READ = "read"
    CREATE = "create"


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds of retries and failover. Delays grow as ``base_delay * 2**round`` (capped at
    ``max_delay``) with full jitter; one round tries every address once."""

    max_attempts: int = 6
    max_total_seconds: float = 30.0
    base_delay: float = 0.25
    max_delay: float = 4.0
    failback_seconds: float = 60.0
    """After a failover, how long the working backup stays first before ``base_url`` is tried
    first again."""


@dataclass(frozen=True)
class HttpResult:
    """A 2xx answer: its status and parsed JSON body."""

    status: int
    body: Any


class _Attempt:
    """Outcome of one failed attempt: the error and whether repeating is allowed."""

    def __init__(self, error: ApiError, *, repeatable: bool, status: int | None = None) -> None:
        self.error = error
        self.repeatable = repeatable
        self.status = status

    @property
    def kind(self) -> int | str:
        """The HTTP status the provider answered, else the error's name (for metrics)."""
        return self.status if self.status is not None else type(self.error).__name__


class StreamResponse:
    """An open 200 response of a streamed call; read with :meth:`next_bytes` (waiting) or
    :meth:`bytes_now` (not waiting), then close."""

    def __init__(self, response: aiohttp.ClientResponse, idle_timeout: float) -> None:
        self._response = response
        self._idle_timeout = idle_timeout

    async def next_bytes(self) -> bytes:
        """The next bytes received (``b""`` at the end). Raises :class:`ApiTimeout` when no
        byte arrives for the idle timeout, :class:`ConnectionFailed` on a broken connection."""
        try:
            async with asyncio.timeout(self._idle_timeout):
                return await self._response.content.readany()
        except TimeoutError:
            raise ApiTimeout(f"no data for {self._idle_timeout:g} s") from None
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as error:
            raise ConnectionFailed(type(error).__name__, request_sent=True) from None

    @property
    def content_type(self) -> str:
        """The media type the provider declared for the body (``text/event-stream``…)."""
        return self._response.content_type

    @property
    def idle_timeout(self) -> float:
        """How long the stream may go without data (its caller may bound events likewise)."""
        return self._idle_timeout

    def bytes_now(self) -> bytes | None:
        """Every byte received and not read yet, without waiting: ``None`` when there is
        none, ``b""`` at the end. Raises :class:`ConnectionFailed` on a broken connection."""
        content = self._response.content
        try:
            received = content.read_nowait()
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as error:
            raise ConnectionFailed(type(error).__name__, request_sent=True) from None
        if received:
            return received
        return b"" if content.is_eof() else None

    def on_end(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (at once if it already has) when the body has arrived whole (not
        when the connection breaks)."""
        self._response.content.on_eof(callback)

    def close(self) -> None:
        """Drop the connection (safe to call more than once)."""
        self._response.close()

    @property
    def closed(self) -> bool:
        """The connection was released or dropped."""
        return self._response.closed


class HttpTransport:
    """POSTs JSON to the provider with auth, failover, retries and typed errors."""

    def __init__(
        self,
        settings: ApiSettings,
        *,
        retry: RetryPolicy | None = None,
        rate_limits: RateLimitPolicy | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._settings = settings
        self.retry = retry or RetryPolicy()
        self.rate_limits = rate_limits or RateLimitPolicy(max_wait=settings.rate_limit_max_wait)
        self._rng = rng or random.Random()
        self._session: aiohttp.ClientSession | None = None
        self._addresses = [
            url.rstrip("/") for url in [settings.base_url, *settings.backup_urls] if url
        ]
        self._proxy = settings.proxy_url.rstrip("/")
        self._preferred: str | None = None
        self._preferred_since = 0.0
        self.last_answer_at: float | None = None
        """``time.monotonic()`` of the provider's last answer below 500 (for readiness)."""

    def session(self) -> aiohttp.ClientSession:
        """The shared session, created on first use (inside the running event loop)."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    sock_connect=self._settings.connect_timeout,
                    sock_read=self._settings.read_timeout,
                ),
                raise_for_status=False,
            )
        return self._session

    async def aclose(self) -> None:
        """Close the session and its connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _headers(self, auth: AuthStyle, key: str | None) -> dict[str, str]:
        if key is None:
            key = self._settings.first_key()
        if auth is AuthStyle.BEARER:
            return {"Authorization": f"Bearer {key}"}
        return {"X-API-KEY": key}

    def addresses(self, *, via_proxy: bool = False) -> list[str]:
        """Base addresses in the order they will be tried."""
        ordered = list(self._addresses)
        if self._preferred in ordered:
            if time.monotonic() - self._preferred_since < self.retry.failback_seconds:
                ordered.remove(self._preferred)
                ordered.insert(0, self._preferred)
            else:
                self._preferred = None
        if via_proxy and self._proxy:
            ordered.insert(0, self._proxy)
        return ordered

    def _worked(self, address: str) -> None:
        if address == self._proxy:
            return
        if address == self._addresses[0]:
            self._preferred = None
        elif address != self._preferred:
            log.warning("provider failover: now using %s first", address)
            metrics.provider_failover()
            self._preferred = address
            self._preferred_since = time.monotonic()

    async def post(
        self,
        path: str,
        body: Mapping[str, Any],
        *,
        auth: AuthStyle,
        safety: CallSafety,
        via_proxy: bool = False,
        key: str | None = None,
    ) -> HttpResult:
        """POST ``body`` to ``path`` with ``key`` (the secret; None: the pool's first key) and
        return the parsed 2xx JSON answer, or raise."""
        addresses = self.addresses(via_proxy=via_proxy)
        if not addresses:
            raise ConnectionFailed("no provider address configured", request_sent=False)
        policy = self.retry
        deadline = time.monotonic() + policy.max_total_seconds
        attempt = 0
        waits = RateLimitWaits(self.rate_limits, self._rng)
        while True:
            address = addresses[attempt % len(addresses)]
            outcome = await self._post_once(address, path, body, auth, safety, key)
            if isinstance(outcome, HttpResult):
                self._worked(address)
                return outcome
            if isinstance(outcome.error, ProviderRateLimited):
                deadline += await waits.wait(outcome.error)
                continue
            attempt += 1
            log.info(
                "POST %s via %s failed (attempt %d): %s", path, address, attempt, outcome.error
            )
            if not outcome.repeatable or attempt >= policy.max_attempts:
                raise outcome.error
            delay = 0.0
            if attempt % len(addresses) == 0:
                ceiling = policy.base_delay * 2 ** (attempt // len(addresses) - 1)
                delay = self._rng.uniform(0, min(policy.max_delay, ceiling))
            if time.monotonic() + delay > deadline:
                raise outcome.error
            metrics.provider_retry(path)
            await asyncio.sleep(delay)

    async def _post_once(
        self,
        address: str,
        path: str,
        body: Mapping[str, Any],
        auth: AuthStyle,
        safety: CallSafety,
        key: str | None,
    ) -> HttpResult | _Attempt:
        started = time.monotonic()
        outcome = await self._attempt(address, path, body, auth, safety, key)
        self._answered(
            path, outcome.status if isinstance(outcome, HttpResult) else outcome.kind, started
        )
        return outcome

    def _answered(self, path: str, status: int | str, started: float) -> None:
        now = time.monotonic()
        metrics.provider_request(path, status, now - started)
        if isinstance(status, int) and status < 500:
            self.last_answer_at = now

    async def _attempt(
        self,
        address: str,
        path: str,
        body: Mapping[str, Any],
        auth: AuthStyle,
        safety: CallSafety,
        key: str | None,
    ) -> HttpResult | _Attempt:
        reads = safety is CallSafety.READ
        try:
            async with self.session().post(
                address + path, json=body, headers=self._headers(auth, key)
            ) as response:
                raw = await response.read()
                status = response.status
                retry_after = response.headers.get("Retry-After")
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as error:
            return _Attempt(
                ConnectionFailed(f"{address}: {type(error).__name__}", request_sent=False),
                repeatable=True,
            )
        except TimeoutError:
            return _Attempt(ApiTimeout(f"{address}{path}: no answer in time"), repeatable=reads)
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as error:
            failure = ConnectionFailed(f"{address}: {type(error).__name__}", request_sent=True)
            return _Attempt(failure, repeatable=reads)
        except aiohttp.InvalidURL:
            return _Attempt(
                ConnectionFailed(f"invalid provider address {address!r}", request_sent=False),
                repeatable=True,
            )
        if 200 <= status < 300:
            parsed = parse_json(raw)
            if parsed is None:
                return _Attempt(
                    InvalidResponse(f"{path}: answer is not JSON ({len(raw)} bytes)"),
                    repeatable=False,
                )
            return HttpResult(status, parsed)
        refusal = error_for_status(status, raw, retry_after)
        _log_undocumented(path, refusal)
        repeatable = reads and isinstance(refusal, ServerError)
        return _Attempt(refusal, repeatable=repeatable, status=status)

    async def open_stream(
        self, path: str, body: Mapping[str, Any], *, auth: AuthStyle, key: str | None = None
    ) -> StreamResponse:
        """POST ``body`` and return the open 200 response for incremental reading.

        Fails over only when a connection could not be made, and waits out a 429 (see
        :mod:`bot.api.ratelimit`); any other failure is raised.
        """
        addresses = self.addresses()
        if not addresses:
            raise ConnectionFailed("no provider address configured", request_sent=False)
        waits = RateLimitWaits(self.rate_limits, self._rng)
        while True:
            try:
                return await self._open_stream_once(addresses, path, body, auth, key)
            except ProviderRateLimited as limited:
                await waits.wait(limited)

    async def _open_stream_once(
        self,
        addresses: list[str],
        path: str,
        body: Mapping[str, Any],
        auth: AuthStyle,
        key: str | None,
    ) -> StreamResponse:
        last: ApiError | None = None
        for address in addresses[: max(1, self.retry.max_attempts)]:
            started = time.monotonic()
            try:
                async with asyncio.timeout(self._settings.read_timeout):
                    response = await self.session().post(
                        address + path,
                        json=body,
                        headers=self._headers(auth, key),
                        timeout=aiohttp.ClientTimeout(
                            total=None, sock_connect=self._settings.connect_timeout
                        ),
                    )
            except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as error:
                last = ConnectionFailed(f"{address}: {type(error).__name__}", request_sent=False)
                self._answered(path, type(last).__name__, started)
                continue
            except TimeoutError:
                self._answered(path, ApiTimeout.__name__, started)
                raise ApiTimeout(f"{address}{path}: no answer in time") from None
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as error:
                self._answered(path, ConnectionFailed.__name__, started)
                raise ConnectionFailed(
                    f"{address}: {type(error).__name__}", request_sent=True
                ) from None
            self._answered(path, response.status, started)
            if response.status != 200:
                try:
                    async with asyncio.timeout(self._settings.read_timeout):
                        raw = await response.read()
                except (aiohttp.ClientError, TimeoutError):
                    raw = b""
                finally:
                    response.release()
                retry_after = response.headers.get("Retry-After")
                refusal = error_for_status(response.status, raw, retry_after)
                _log_undocumented(path, refusal)
                raise refusal
            self._worked(address)
            return StreamResponse(response, self._settings.stream_idle_timeout)
        assert last is not None
        raise last


def _log_undocumented(path: str, error: ApiError) -> None:
    """Log an answer whose status the provider's API does not document, with that status (at
    warning: whoever reads the log learns what the provider said, not only the user)."""
    if isinstance(error, UnexpectedStatus):
        log.warning("POST %s: %s", path, error)
