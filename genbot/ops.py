"""The operations listener: ``/healthz``, ``/readyz`` and ``/metrics`` for orchestrators and
Prometheus (``[ops]`` settings).

- ``GET /healthz``: 200 ``{"status": "alive"}`` while the process serves at all.
- ``GET /readyz``: 200 when every check passes, else 503, with a JSON body naming each check:
  ``started`` (startup finished), ``stopping`` (no drain under way), ``storage`` (the database
  answers, its schema is at this genbot's version and it takes a write), ``provider`` (it
  answered within ``provider_fresh_seconds``, or answers a free probe now) and one per enabled
  adapter (connected).
- ``GET /metrics``: Prometheus text exposition of ``prometheus_client``'s default registry
  (:mod:`bot.kernel.metrics`), after the :data:`bot.kernel.metrics.Refresher` callables ran.

Like the playground, it answers only the ``Host`` names it was given (:mod:`adapters.hosts`): a
loopback name, an IP address it listens on (any address when ``[ops] host`` is every address:
a scraper or probe reaching it by an address is no rebinding page, which needs a name of its
own) and ``[ops] allowed_hosts``; any other ``Host`` gets 421 and runs nothing, so a web page
whose name an attacker points at this machine (DNS rebinding) cannot read ``/metrics``.

It serves through the shared hardened listener (:mod:`adapters.listener`: header and body
timeouts, a connection cap; requests have no body, so any body is refused) and samples
event-loop lag (``genbot_event_loop_lag_seconds``) while it runs. Each check is bounded in time:
``/readyz`` answers within :data:`CHECK_TIMEOUT` even when a check hangs (a stalled database:
the check is abandoned, not awaited, and cleans up in the background).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from adapters.hosts import HostName, allowed_hosts, host_allowed, is_address, parse_host
from adapters.listener import Listener, ListenerLimits
from bot.api.errors import ApiError
from bot.api.http import AuthStyle, CallSafety, HttpTransport
from bot.kernel import OpsSettings, metrics
from bot.kernel.metrics import Refresher

log = logging.getLogger("genbot.ops")

CHECK_TIMEOUT = 5.0
"""Upper bound of each readiness check."""
PROBE_TIMEOUT = 2.0
"""Upper bound of the provider probe (its retries included)."""
LAG_INTERVAL = 0.5
"""How often the event loop's lag is sampled."""
LIMITS = ListenerLimits(max_body_bytes=0, max_connections=64, header_timeout=10.0)
"""Scrapers and probes need few connections and send no body."""
ANY_ADDRESS = frozenset({"", "0.0.0.0", "::"})
"""``[ops] host`` values that listen on every address of the machine."""
WRONG_HOST = "This ops listener does not answer to that host name: add it to [ops] allowed_hosts."
PROBE_PATH = "/v1/chat/completions"
PROBE_BODY = {"model": "llm-3.5-turbo", "messages": []}
"""A chat request the provider refuses (400) without running or charging anything."""

Check = Callable[[], Awaitable["CheckResult"]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class CheckResult:
    """One readiness check: whether it passes and why (shown in ``/readyz``)."""

    ok: bool
    detail: str


class ProviderFreshness:
    """Whether the provider answered lately (see the module docstring), probing when needed."""

    def __init__(self, transport: HttpTransport, settings: OpsSettings) -> None:
        self.transport = transport
        self.fresh_seconds = settings.provider_fresh_seconds
        self.probe_interval = settings.probe_interval_seconds
        self._probed_at = -float("inf")
        self._probe_lock = asyncio.Lock()

    def _age(self) -> float | None:
        answered = self.transport.last_answer_at
        return None if answered is None else time.monotonic() - answered

    async def __call__(self) -> CheckResult:
        age = self._age()
        if age is None or age > self.fresh_seconds:
            async with self._probe_lock:
                if time.monotonic() - self._probed_at >= self.probe_interval:
                    self._probed_at = time.monotonic()
                    with contextlib.suppress(ApiError, TimeoutError):
                        async with asyncio.timeout(PROBE_TIMEOUT):
                            await self.transport.post(
                                PROBE_PATH,
                                PROBE_BODY,
                                auth=AuthStyle.BEARER,
                                safety=CallSafety.READ,
                            )
            age = self._age()
        if age is None:
            return CheckResult(False, "the provider has not answered yet")
        if age > self.fresh_seconds:
            return CheckResult(False, f"the provider last answered {age:.0f} s ago")
        return CheckResult(True, f"the provider answered {age:.0f} s ago")


_abandoned: set[asyncio.Task[CheckResult]] = set()


async def run_check(check: Check, timeout: float = CHECK_TIMEOUT) -> CheckResult:
    """``check()`` within ``timeout`` seconds; a failure is a failed check. A check still
    running then is cancelled but not waited for (a driver's cancellation of a statement on a
    stalled server can take seconds more), so the answer never waits past ``timeout``."""
    task = asyncio.ensure_future(check())
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not done:
        task.cancel()
        _abandoned.add(task)
        task.add_done_callback(_forget_abandoned)
        return CheckResult(False, f"no answer within {timeout:g} s")
    try:
        return task.result()
    except Exception as error:
        return CheckResult(False, f"{type(error).__name__}: {error}")


def _forget_abandoned(task: asyncio.Task[CheckResult]) -> None:
    _abandoned.discard(task)
    if not task.cancelled():
        task.exception()


async def readiness(checks: Mapping[str, Check]) -> tuple[bool, dict[str, Any]]:
    """Run ``checks`` concurrently; whether all pass, and the ``/readyz`` body."""
    names = list(checks)
    results = await asyncio.gather(*(run_check(checks[name]) for name in names))
    body = {name: {"ok": r.ok, "detail": r.detail} for name, r in zip(names, results, strict=True)}
    ready = all(result.ok for result in results)
    return ready, {"status": "ready" if ready else "not ready", "checks": body}


class OpsListener:
    """Serves the three routes on ``settings.host:port`` (port 0 picks a free one)."""

    def __init__(
        self,
        settings: OpsSettings,
        checks: Callable[[], Mapping[str, Check]],
        refreshers: Sequence[Refresher] = (),
    ) -> None:
        self.settings = settings
        self.checks = checks
        self.refreshers = list(refreshers)
        self.listener = Listener(self.app(), "ops listener", LIMITS)
        self._lag: asyncio.Task[None] | None = None
        bound = settings.host.strip().strip("[]").lower()
        self._hosts = allowed_hosts(settings.allowed_hosts)
        if bound not in ANY_ADDRESS:
            self._hosts.append(HostName(bound, None))

    def host_allowed(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header is answered (see the module
        docstring)."""
        if host_allowed(header, self._hosts):
            return True
        host = parse_host(header or "")
        return host is not None and self.settings.host in ANY_ADDRESS and is_address(host)

    @property
    def port(self) -> int | None:
        """The port listened on, once started."""
        return self.listener.port

    @property
    def url(self) -> str:
        """``http://host:port`` of the running listener."""
        if self.port is None:
            raise RuntimeError("the ops listener is not started")
        host = self.settings.host
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1"
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def app(self) -> web.Application:
        """The aiohttp application: three GET routes, bodies and other hosts refused."""
        app = web.Application(client_max_size=LIMITS.max_body_bytes, middlewares=[self._host])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        return app

    async def start(self) -> None:
        """Listen (``OSError`` naming ``[ops] port`` when it cannot) and sample loop lag."""
        try:
            await self.listener.start(self.settings.host, self.settings.port)
        except OSError as error:
            raise OSError(
                error.errno,
                f"the ops listener cannot listen on {self.settings.host}:{self.settings.port} "
                f"({error.strerror or error}); choose another [ops] port",
            ) from error
        self._lag = asyncio.create_task(sample_loop_lag(), name="genbot-loop-lag")
        log.info("ops listener at %s (/healthz, /readyz, /metrics)", self.url)

    async def stop(self) -> None:
        """Stop sampling and listening."""
        if self._lag is not None:
            self._lag.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._lag
            self._lag = None
        await self.listener.stop()

    @web.middleware
    async def _host(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not self.host_allowed(request.headers.get("Host")):
            log.info("ops listener refused Host %r", request.headers.get("Host", "")[:100])
            return web.Response(status=421, text=WRONG_HOST)
        return await handler(request)

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "alive"})

    async def _readyz(self, request: web.Request) -> web.Response:
        ready, body = await readiness(self.checks())
        return web.json_response(body, status=200 if ready else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        for refresh in self.refreshers:
            try:
                async with asyncio.timeout(CHECK_TIMEOUT):
                    await refresh()
            except Exception as error:
                log.warning("refreshing metrics before a scrape failed: %s", error)
        response = web.Response(body=generate_latest(REGISTRY))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response


async def sample_loop_lag(interval: float = LAG_INTERVAL) -> None:
    """Forever: sleep ``interval`` and record how much later than asked the loop woke up."""
    loop = asyncio.get_running_loop()
    while True:
        asked = loop.time()
        await asyncio.sleep(interval)
        metrics.loop_lag(loop.time() - asked - interval)
