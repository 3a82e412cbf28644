"""Opening the Slack transports at start-up; every refusal is a one-line
:class:`adapters.AdapterStartError` naming the setting to fix."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Mapping

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters import AdapterStartError
from adapters.listener import Listener, ListenerLimits, answer_and_close, refused
from bot.kernel import RateWindow, _

EVENTS_PATH = "/slack/events"
SIGNATURE_WINDOW_SECONDS = 300
"""How old a request's timestamp may be (Slack's and bolt's five minutes)."""
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")
SOCKET_CONNECT_TIMEOUT = 30.0
INSTALLS_PER_CLIENT = 10
INSTALL_WINDOW_SECONDS = 60.0
"""Each visit of the install page stores an OAuth state: one address may start this many
installs a minute (a person needs one or two)."""


async def checked_call(
    call: Awaitable[AsyncSlackResponse], method: str, token: str, api_url: str
) -> AsyncSlackResponse:
    """``call``'s answer; Slack's refusal of ``token`` (``bot_token``/``app_token``) or an
    unreachable ``api_url`` as :class:`AdapterStartError`."""
    try:
        return await call
    except SlackApiError as error:
        code = error.response.get("error")
        name = token.replace("_", " ")
        raise AdapterStartError(
            f"Slack {method} refused the {name}: {code} (check [slack] {token})"
        ) from None
    except (SlackClientError, aiohttp.ClientError, OSError) as error:
        raise AdapterStartError(
            f"cannot reach Slack at {api_url}: {error or type(error).__name__}"
        ) from error


async def open_socket(
    app: AsyncApp, client: AsyncWebClient, app_token: str, api_url: str
) -> AsyncSocketModeHandler:
    """A connected Socket Mode handler. The app token is checked first: the SDK itself would
    retry a refused token forever."""
    opened = await checked_call(
        client.apps_connections_open(app_token=app_token),
        "apps.connections.open",
        "app_token",
        api_url,
    )
    handler = AsyncSocketModeHandler(app, app_token=app_token)
    handler.client.wss_uri = str(opened["url"])
    try:
        async with asyncio.timeout(SOCKET_CONNECT_TIMEOUT):
            await handler.connect_async()  # type: ignore[no-untyped-call]
    except TimeoutError:
        await handler.close_async()  # type: ignore[no-untyped-call]
        raise AdapterStartError(
            f"Slack's Socket Mode websocket did not connect within {SOCKET_CONNECT_TIMEOUT:g} s"
        ) from None
    return handler


SLACK_LIMITS = ListenerLimits(max_body_bytes=1024 * 1024)
"""Slack's requests: events and interactivity payloads carry whole messages (up to about
40,000 characters of text plus blocks), so bodies up to 1 MiB are taken."""


def slack_web_app(app: AsyncApp) -> web.Application:
    """Bolt's request handling at :data:`EVENTS_PATH` and, when the app installs by OAuth,
    its install page (at most :data:`INSTALLS_PER_CLIENT` a minute per address) and OAuth
    redirect (as bolt's own aiohttp server serves them)."""

    async def events(request: web.Request) -> web.Response:
        unsigned = unsigned_reason(request.headers, time.time())
        if unsigned is not None:
            refused(request, f"Slack request {unsigned}")
            return await answer_and_close(request, web.Response(status=401, text="invalid request"))
        return await to_aiohttp_response(await app.async_dispatch(await to_bolt_request(request)))

    routes = [web.post(EVENTS_PATH, events)]
    flow = app.oauth_flow
    if flow is not None:
        installs = RateWindow(INSTALLS_PER_CLIENT, INSTALL_WINDOW_SECONDS)

        async def install(request: web.Request) -> web.Response:
            client = request.remote or ""
            if not installs.allow(client):
                refused(request, "too many installs from one address")
                wait = max(1, round(installs.retry_after(client)))
                return web.Response(
                    status=429,
                    text=_(
                        "Too many installs from your address; try again in {wait} s.", wait=wait
                    ),
                    headers={"Retry-After": str(wait)},
                )
            bolt_request = await to_bolt_request(request)
            return await to_aiohttp_response(await flow.handle_installation(bolt_request))

        async def redirect(request: web.Request) -> web.Response:
            bolt_request = await to_bolt_request(request)
            return await to_aiohttp_response(await flow.handle_callback(bolt_request))

        routes += [web.get(flow.install_path, install), web.get(flow.redirect_uri_path, redirect)]
    web_app = web.Application()
    web_app.add_routes(routes)
    return web_app


def unsigned_reason(headers: Mapping[str, str], now: float) -> str | None:
    """Why a request cannot be one Slack signed, from its headers alone (bolt checks the
    signature itself once the body is read), or None: a missing or stale
    ``X-Slack-Request-Timestamp`` or a missing ``X-Slack-Signature`` is refused before a byte
    of the body is read."""
    stamp = headers.get("X-Slack-Request-Timestamp", "")
    if not stamp.isdigit():
        return "without a timestamp"
    if abs(now - int(stamp)) > SIGNATURE_WINDOW_SECONDS:
        return "with a stale timestamp"
    if not _SIGNATURE.fullmatch(headers.get("X-Slack-Signature", "")):
        return "without a signature"
    return None


async def serve_http(app: AsyncApp, host: str, port: int) -> tuple[Listener, int]:
    """Slack's HTTP endpoints on a hardened listener (:mod:`adapters.listener`); the listener
    and the bound port."""
    listener = Listener(slack_web_app(app), "Slack HTTP listener", SLACK_LIMITS)
    try:
        bound = await listener.start(host, port)
    except OSError as error:
        raise AdapterStartError(f"cannot listen on {host}:{port}: {error}") from error
    return listener, bound
