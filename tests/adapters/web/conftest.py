"""Fixtures: a started playground (127.0.0.1, port 0) fed to a recording core, HTTP "browsers",
and one real Chromium shared by the browser tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import ClientResponse, ClientSession, CookieJar
from playwright.async_api import Browser
from yarl import URL

from adapters.web import WebAdapter
from adapters.web.access import SESSION_COOKIE
from adapters.web.settings import WebSettings
from bot.kernel import ChatSettings, LimitsSettings
from tests.adapters.web.browser import chromium
from tests.adapters.web.fakes import RecordingCore, SseReader
from tests.fakes.router import FakeRouter

UPLOAD_LIMIT = 4096
DOCUMENT_LIMIT = 8192


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def chromium_browser() -> AsyncIterator[Browser]:
    """One headless Chromium for every browser test of the run (tests using it run in the
    session's event loop: ``pytest.mark.asyncio(loop_scope="session")``)."""
    async with chromium() as browser:
        yield browser


@pytest.fixture
def core() -> RecordingCore:
    return RecordingCore()


@pytest.fixture
async def adapter(core: RecordingCore) -> AsyncIterator[WebAdapter]:
    web_adapter = WebAdapter(
        WebSettings(host="127.0.0.1", port=0),
        LimitsSettings(max_upload_bytes=UPLOAD_LIMIT),
        chat=ChatSettings(documents_max_mb=DOCUMENT_LIMIT / 1024 / 1024),
        keepalive_seconds=0.05,
        handler_timeout=5.0,
    )
    core.surface = web_adapter.surface
    await web_adapter.start(FakeRouter(core, [web_adapter.surface]))
    yield web_adapter
    await web_adapter.stop()


@pytest.fixture
async def browsers(adapter: WebAdapter) -> AsyncIterator[Callable[[], ClientSession]]:
    """Make as many browsers (cookie-keeping sessions, each with the session a page load
    gives) as a test needs."""
    async with AsyncExitStack() as stack:

        def make() -> ClientSession:
            session = ClientSession(base_url=adapter.url, cookie_jar=CookieJar(unsafe=True))
            stack.push_async_callback(session.close)
            given_by_a_page_load = {SESSION_COOKIE: adapter.access.new_session()}
            session.cookie_jar.update_cookies(given_by_a_page_load, URL(adapter.url))
            return session

        yield make


@pytest.fixture
async def browser(browsers: Callable[[], ClientSession]) -> ClientSession:
    return browsers()


@pytest.fixture
async def stream(
    browser: ClientSession,
) -> AsyncIterator[Callable[..., Awaitable[SseReader]]]:
    """Open event streams; each waits for its ``hello`` so that nothing later is missed."""
    responses: list[ClientResponse] = []

    async def open_stream(
        session: ClientSession | None = None, channel: str = "general", **params: Any
    ) -> SseReader:
        response = await (session or browser).get(
            "/api/events", params={"channel": channel, **params}
        )
        assert response.status == 200, await response.text()
        responses.append(response)
        reader = SseReader(response)
        hello = await reader.next()
        assert hello.data["type"] == "hello"
        return reader

    yield open_stream
    for response in responses:
        response.close()
