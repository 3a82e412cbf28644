"""Opening the Slack transports at start-up; every refusal is a one-line
:class:`adapters.AdapterStartError` naming the setting to fix."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import aiohttp
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters import AdapterStartError

EVENTS_PATH = "/slack/events"
SOCKET_CONNECT_TIMEOUT = 30.0


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


async def serve_http(app: AsyncApp, host: str, port: int) -> tuple[web.AppRunner, int]:
    """Bolt's request handler served at :data:`EVENTS_PATH`; the runner and the bound port."""
    runner = web.AppRunner(app.web_app(path=EVENTS_PATH), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as error:
        await runner.cleanup()
        raise AdapterStartError(f"cannot listen on {host}:{port}: {error}") from error
    return runner, int(runner.addresses[0][1])
