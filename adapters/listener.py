"""Hardened aiohttp listeners: every HTTP server genbot runs (the playground, the webhook
receiver, Slack's HTTP mode, the ops listener) serves its application through :class:`Listener`.

What a :class:`Listener` adds to aiohttp, with :class:`ListenerLimits`:

- **header timeout**: a new connection must deliver a complete request head within
  ``header_timeout`` seconds or it is closed; between requests on a kept-alive connection,
  aiohttp's idle timeout (``idle_timeout``) does the same;
- **body timeout**: a handler still reading a request body ``body_timeout`` seconds after the
  request started gets :class:`BodyTimeout` from its read, and the client a 408;
- **body pace**: after ``body_grace_seconds``, a body must keep arriving at
  ``min_body_bytes_per_second`` or more, measured over each second in which the handler waited
  for it (:mod:`adapters.body_pace`; :class:`BodyTooSlow`, a 408 and a closed connection), so a
  client trickling a byte now and then is let go in seconds rather than at the body timeout;
- **connection cap**: at most ``max_connections`` open connections per listener, and fewer than
  the process's open-file limit over all listeners (with room for every listener's burst of
  accepts, so accepting never fails for want of files). A connection beyond a cap first makes room
  by closing the oldest connection (of any listener) that has not sent a complete request head;
  when none has, it gets a 503 and is closed;
- **per-client cap**: at most ``max_connections_per_client`` open connections of one client
  address carry requests at once; a request on one more gets a 503 and its connection is
  closed, so one client cannot hold the listener's whole cap (behind a proxy, the proxy is the
  client);
- **body limits per route**: ``@body_limit(n)`` on a handler (else ``max_body_bytes``); a
  declared ``Content-Length`` above it gets a 413 before the handler runs, and ``read()``,
  ``post()`` and ``json()`` stop at it. Handlers that stream ``request.content`` themselves
  count what they read;
- **small read buffers**: aiohttp buffers at most twice :data:`READ_BUFFER_BYTES` of a body a
  handler has not read yet; a handler refusing a request before reading its body can answer
  with :func:`answer_and_close` so the rest is never read;
- **quiet refusals**: refusals (the ones above, and the ones handlers report with
  :func:`refused`) and the event loop's "socket.accept() out of system resource" errors are
  logged at most once per ``log_interval`` seconds, with counts.

Usage::

    listener = Listener(app, "webhook receiver")      # before the app is started anywhere
    port = await listener.start(host, port)           # port 0 picks a free port
    ...
    await listener.stop()

Access logging is off: request paths can carry tokens.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import weakref
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from adapters.body_pace import BodyPace
from bot.kernel import N_, _

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
H = TypeVar("H", bound=Callable[..., Any])

READ_BUFFER_BYTES = 16 * 1024
"""What aiohttp buffers of a request body before a handler reads it (twice this, then it stops
reading the socket): small, so many connections sending bodies hold little memory."""
ACCEPT_BACKLOG = 32
"""Connections the kernel queues for a listener; asyncio accepts up to this many at once (in one
turn of the loop) before any of them reaches :class:`Listener`, so files for them are kept free
of the connection cap."""
RESERVED_FILES = 64
"""Open files kept free of connections for the rest of the process (the database, logs,
outgoing HTTP)."""
ACCEPT_BURSTS = 2
"""Bursts of accepts per listener kept room for: a burst's connections are counted (and room
made for them) a turn of the loop after they were accepted, and the files of the connections
closed to make room are released a turn later, while the next burst may already arrive."""
SHED_ON_ACCEPT_ERROR = 32
"""Connections without a request head closed when accepting fails for want of files."""
ACCEPT_ERROR = "socket.accept() out of system resource"
TOO_MANY_FROM_YOU = N_("Too many connections from your address; close some and try again.")
_BODY_LIMIT_ATTRIBUTE = "_genbot_max_body_bytes"
_BODY_TIMEOUT_ATTRIBUTE = "_genbot_body_timeout"
_UNAVAILABLE = b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
CLIENTS_SWEPT_AT = 4096
"""Client addresses kept before the ones without open connections are forgotten."""


@dataclass(frozen=True)
class ListenerLimits:
    """The bounds of one listener (see the module docstring); times in seconds."""

    header_timeout: float = 15.0
    body_timeout: float = 60.0
    idle_timeout: float = 30.0
    max_connections: int = 1000
    max_connections_per_client: int = 256
    max_body_bytes: int = 64 * 1024
    min_body_bytes_per_second: int = 2048
    body_grace_seconds: float = 3.0
    log_interval: float = 60.0
    shutdown_timeout: float = 2.0


class BodyTimeout(TimeoutError):
    """The request body did not arrive in time (the client gets a 408)."""


class BodyTooSlow(BodyTimeout):
    """The request body arrived slower than the listener's floor (the client gets a 408)."""


def body_limit(max_bytes: int, *, timeout: float | None = None) -> Callable[[H], H]:
    """Let the decorated route handler accept bodies up to ``max_bytes`` (and, with
    ``timeout``, take that many seconds to receive them instead of ``body_timeout``)."""

    def mark(handler: H) -> H:
        setattr(handler, _BODY_LIMIT_ATTRIBUTE, max_bytes)
        if timeout is not None:
            setattr(handler, _BODY_TIMEOUT_ATTRIBUTE, timeout)
        return handler

    return mark


class RefusalLog:
    """Counts refusals by reason and logs them at most once per ``interval`` seconds: the first
    at once, the rest summed up when the interval ends."""

    def __init__(self, what: str, interval: float, logger: logging.Logger = log) -> None:
        self.what = what
        self.interval = interval
        self.totals: Counter[str] = Counter()
        self._logger = logger
        self._pending: Counter[str] = Counter()
        self._timer: asyncio.TimerHandle | None = None

    def note(self, reason: str) -> None:
        """Count one refusal for ``reason`` (a short phrase, no user data)."""
        self.totals[reason] += 1
        if self._timer is not None:
            self._pending[reason] += 1
            return
        self._logger.warning(
            "%s refused: %s (more are counted and logged every %g s)",
            self.what,
            reason,
            self.interval,
        )
        self._arm()

    def flush(self) -> None:
        """Log what was counted since the last line, and stop the timer."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending:
            counts = ", ".join(f"{n} × {reason}" for reason, n in self._pending.most_common())
            self._logger.warning(
                "%s refused %d more in the last %g s: %s",
                self.what,
                sum(self._pending.values()),
                self.interval,
                counts,
            )
            self._pending.clear()

    def _arm(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer = loop.call_later(self.interval, self._tick)

    def _tick(self) -> None:
        self._timer = None
        if self._pending:
            self.flush()
            self._arm()


_REFUSALS = web.RequestKey("genbot_refusals", RefusalLog)


_ACCEPT_ERRORS = RefusalLog("accepting connections", 60.0)
_LISTENERS: weakref.WeakSet[Listener] = weakref.WeakSet()
_WAITING: OrderedDict[RequestHandler, Listener] = OrderedDict()
"""Connections that have not sent a complete request head yet, oldest first."""


def refused(request: web.Request, reason: str) -> None:
    """Count (and log, see :class:`RefusalLog`) a refusal a handler decided on."""
    refusals = request.get(_REFUSALS)
    (refusals if refusals is not None else _ACCEPT_ERRORS).note(reason)


async def answer_and_close(request: web.Request, response: web.Response) -> web.Response:
    """Send ``response`` and close the connection without reading the rest of the request's
    body (a refused upload or webhook is not drained into memory first). Return what this
    returns from the handler."""
    response.force_close()
    await response.prepare(request)
    await response.write_eof()
    if request.body_exists and not request.content.is_eof():
        request.protocol.force_close()
    return response


def open_file_limit() -> int:
    """The process's open-file limit, raised to its hard limit first (once is enough)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def _quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    previous = loop.get_exception_handler()
    if getattr(previous, "genbot_accept_errors", False):
        return

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") == ACCEPT_ERROR:
            error = context.get("exception")
            _ACCEPT_ERRORS.note(f"out of resources ({type(error).__name__}: {error})")
            _shed_waiting(SHED_ON_ACCEPT_ERROR)
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    handler.genbot_accept_errors = True  # type: ignore[attr-defined]
    loop.set_exception_handler(handler)


def _shed_waiting(count: int) -> Listener | None:
    """Close up to ``count`` of the oldest open connections still without a request head (so
    accepting, and normal requests, go on at the open-file limit); the listener of the last
    one closed, None when there was none."""
    owner: Listener | None = None
    while count > 0 and _WAITING:
        oldest, listener = _WAITING.popitem(last=False)
        if oldest.transport is None or oldest.transport.is_closing():
            continue
        listener.refusals.note("room made for a new connection (request head too slow)")
        oldest.force_close()
        owner, count = listener, count - 1
    return owner


def _still_closing(listener: Listener) -> int:
    """Connections of ``listener`` closed but not yet gone (they still count as open)."""
    server = listener._runner.server if listener._runner is not None else None
    if server is None:
        return 0
    return sum(c.transport is None or c.transport.is_closing() for c in server.connections)


class _Refuse(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.write(_UNAVAILABLE)
        transport.close()


class Listener:
    """Serves one aiohttp application on one address, within :class:`ListenerLimits`."""

    def __init__(self, app: web.Application, name: str, limits: ListenerLimits | None = None):
        self.name = name
        self.limits = limits or ListenerLimits()
        self.refusals = RefusalLog(name, self.limits.log_interval)
        self.port: int | None = None
        self._app = app
        self._runner: web.AppRunner | None = None
        self._server: asyncio.AbstractServer | None = None
        self._clients: dict[str, set[RequestHandler]] = {}
        app.middlewares.insert(0, self._middleware)

    @property
    def connections(self) -> int:
        """Open connections right now."""
        server = self._runner.server if self._runner is not None else None
        return len(server.connections) if server is not None else 0

    async def start(self, host: str, port: int) -> int:
        """Listen on ``host:port`` and return the port; ``OSError`` when it cannot."""
        if self._runner is not None:
            raise RuntimeError(f"the {self.name} is already listening")
        loop = asyncio.get_running_loop()
        _quiet_accept_errors(loop)
        self._file_limit = open_file_limit()
        runner = web.AppRunner(
            self._app,
            access_log=None,
            keepalive_timeout=self.limits.idle_timeout,
            lingering_time=2.0,
            read_bufsize=READ_BUFFER_BYTES,
            shutdown_timeout=self.limits.shutdown_timeout,
        )
        await runner.setup()
        try:
            self._server = await loop.create_server(
                self._protocol, host, port, reuse_address=True, backlog=ACCEPT_BACKLOG
            )
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        _LISTENERS.add(self)
        sockets = self._server.sockets
        self.port = int(sockets[0].getsockname()[1]) if sockets else port
        return self.port

    async def stop(self) -> None:
        """Stop listening and close every connection (bounded by ``shutdown_timeout``)."""
        server, self._server = self._server, None
        runner, self._runner = self._runner, None
        _LISTENERS.discard(self)
        if server is not None:
            server.close()
        if runner is not None:
            await runner.cleanup()
        self.refusals.flush()

    # ----- connections -----

    def _protocol(self) -> asyncio.Protocol:
        runner = self._runner
        if runner is None or runner.server is None:
            return _Refuse()
        if not self._make_room():
            self.refusals.note("too many connections")
            return _Refuse()
        protocol = runner.server()
        _WAITING[protocol] = self
        loop = asyncio.get_running_loop()
        loop.call_later(self.limits.header_timeout, self._head_overdue, protocol)
        return protocol

    def _make_room(self) -> bool:
        accepting = ACCEPT_BURSTS * ACCEPT_BACKLOG * len(_LISTENERS)
        process_cap = max(16, self._file_limit - RESERVED_FILES - accepting)
        mine = self.connections - _still_closing(self)
        everyone = sum(listener.connections - _still_closing(listener) for listener in _LISTENERS)
        while mine >= self.limits.max_connections or everyone >= process_cap:
            owner = _shed_waiting(1)
            if owner is None:
                return False
            everyone -= 1
            mine -= owner is self
        return True

    def _head_overdue(self, protocol: RequestHandler) -> None:
        if _WAITING.pop(protocol, None) is not None and protocol.transport is not None:
            self.refusals.note(f"no request head within {self.limits.header_timeout:g} s")
            protocol.force_close()

    # ----- requests -----

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        _WAITING.pop(request.protocol, None)
        request[_REFUSALS] = self.refusals
        if self._client_over_cap(request):
            self.refusals.note("too many connections from one client")
            busy = web.json_response({"error": _(TOO_MANY_FROM_YOU)}, status=503)
            return await answer_and_close(request, busy)
        route_handler = request.match_info.handler
        limit = getattr(route_handler, _BODY_LIMIT_ATTRIBUTE, self.limits.max_body_bytes)
        timeout = getattr(route_handler, _BODY_TIMEOUT_ATTRIBUTE, self.limits.body_timeout)
        if request.content_length is not None and request.content_length > limit:
            self.refusals.note("body too large")
            too_large = web.json_response({"error": _too_large(limit)}, status=413)
            return await answer_and_close(request, too_large)
        if not request.body_exists:
            return await handler(request)
        # request.clone(client_max_size=...) would hide what later middlewares store in the
        # request from the response hooks, which see the original request.
        request._client_max_size = limit
        loop = asyncio.get_running_loop()
        timer = loop.call_later(timeout, _body_overdue, request)
        pace = BodyPace(
            request.content,
            floor_bytes_per_second=self.limits.min_body_bytes_per_second,
            grace_seconds=self.limits.body_grace_seconds,
            too_slow=BodyTooSlow,
        )
        try:
            return await handler(request)
        except BodyTooSlow:
            floor = self.limits.min_body_bytes_per_second
            self.refusals.note(f"body slower than {floor} bytes/s")
            too_slow = {"error": _("The request body was too slow.")}
            return _closing(web.json_response(too_slow, status=408))
        except BodyTimeout:
            self.refusals.note(f"body not received within {timeout:g} s")
            too_slow = {"error": _("The request body was too slow.")}
            return _closing(web.json_response(too_slow, status=408))
        except web.HTTPRequestEntityTooLarge:
            self.refusals.note("body too large")
            return _closing(web.json_response({"error": _too_large(limit)}, status=413))
        finally:
            timer.cancel()
            pace.cancel()

    def _client_over_cap(self, request: web.Request) -> bool:
        """Count ``request``'s connection for its client; whether the client now has more
        open connections carrying requests than ``max_connections_per_client``."""
        held = self._clients.setdefault(request.remote or "", set())
        held.add(request.protocol)
        held.difference_update([p for p in held if _closed(p)])
        if len(self._clients) > CLIENTS_SWEPT_AT:
            for client, protocols in list(self._clients.items()):
                protocols.difference_update([p for p in protocols if _closed(p)])
                if not protocols:
                    del self._clients[client]
        return len(held) > self.limits.max_connections_per_client


def _closed(protocol: RequestHandler) -> bool:
    return protocol.transport is None or protocol.transport.is_closing()


def _body_overdue(request: web.Request) -> None:
    if not request.content.is_eof():
        request.content.set_exception(BodyTimeout())


def _closing(response: web.Response) -> web.Response:
    response.force_close()
    return response


def _too_large(limit: int) -> str:
    return _("The request body is too large (at most {limit} bytes here).", limit=limit)
