"""Tiny HTTP servers on 127.0.0.1 standing in for Discord's and Slack's APIs at startup: one that
never answers, and fixed answers for a refused token; and the environment that points a
``genbot run`` at one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from tests.genbot.process import CHILD_WAIT, clean_env

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SLACK_TOKEN = "xoxb-never-print-this-token"
DISCORD_TOKEN = "discord.never-print-this-token"


@dataclass
class Stub:
    """A running stub: its base URL and the paths it was asked for, in order."""

    url: str
    paths: list[str] = field(default_factory=list)
    asked: asyncio.Event = field(default_factory=asyncio.Event)

    async def until_asked(self, timeout: float = CHILD_WAIT) -> str:
        """Wait (bounded: a ``genbot`` child starting on a loaded machine) until a first request
        arrived; its path."""
        async with asyncio.timeout(timeout):
            await self.asked.wait()
        return self.paths[0]


@asynccontextmanager
async def stub_server(answer: Handler | None = None) -> AsyncIterator[Stub]:
    """Serve every path with ``answer``, or never answer when it is ``None`` (each request waits
    until the stub stops)."""
    released = asyncio.Event()
    stub = Stub(url="")

    async def handle(request: web.Request) -> web.StreamResponse:
        stub.paths.append(request.path)
        stub.asked.set()
        if answer is not None:
            return await answer(request)
        await released.wait()
        return web.Response(status=503)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    stub.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield stub
    finally:
        released.set()
        await runner.cleanup()


async def slack_refuses_the_token(request: web.Request) -> web.Response:
    """Slack's answer to ``auth.test`` with a revoked or wrong bot token."""
    return web.json_response({"ok": False, "error": "invalid_auth"})


async def discord_refuses_the_token(request: web.Request) -> web.Response:
    """Discord's answer to ``GET /users/@me`` with a wrong bot token."""
    return web.json_response({"message": "401: Unauthorized", "code": 0}, status=401)


def platform_env(platform: str, stub_url: str, database: Path) -> dict[str, str]:
    """A clean environment running only ``platform`` (``slack`` or ``discord``), whose API is
    the stub at ``stub_url``, on the SQLite file ``database``."""
    if platform == "slack":
        settings = {
            "GENBOT_SLACK__BOT_TOKEN": SLACK_TOKEN,
            "GENBOT_SLACK__SIGNING_SECRET": "signing-secret",
            "GENBOT_SLACK__API_URL": f"{stub_url}/api/",
        }
    else:
        settings = {
            "GENBOT_DISCORD__TOKEN": DISCORD_TOKEN,
            "GENBOT_DISCORD__API_BASE": f"{stub_url}/api/v10",
            "GENBOT_DISCORD__GATEWAY_URL": "ws://127.0.0.1:9/",
        }
    return clean_env({**settings, "GENBOT_STORAGE__PATH": str(database)})
