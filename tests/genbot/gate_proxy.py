"""A loopback HTTP proxy in front of the simulator that can hold image downloads and streamed
chat answers midway, so a test can stop genbot while a delivery or a stream is in progress.

The proxy forwards the ``Host`` it was called with, so the simulator's result URLs point back
at the proxy and image downloads pass through it too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiohttp import ClientSession, web

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}
)


@dataclass
class Gate:
    """Held traffic waits on :attr:`opened`; :attr:`reached` is set when some arrived."""

    opened: asyncio.Event = field(default_factory=asyncio.Event)
    reached: asyncio.Event = field(default_factory=asyncio.Event)

    async def hold(self) -> None:
        self.reached.set()
        await self.opened.wait()


@dataclass
class GateProxy:
    """Forwards to ``upstream``; image downloads wait on :attr:`images`, streamed chat answers
    on :attr:`streams` after their first ``stream_lines_before_hold`` data lines."""

    upstream: str
    url: str = ""
    images: Gate = field(default_factory=Gate)
    streams: Gate = field(default_factory=Gate)
    stream_lines_before_hold: int = 3
    session: ClientSession | None = None

    async def forward(self, request: web.Request) -> web.StreamResponse:
        assert self.session is not None
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        if request.method == "GET" and request.path.endswith(".png"):
            await self.images.hold()
        async with self.session.request(
            request.method,
            self.upstream + request.path_qs,
            headers=headers,
            data=body,
            allow_redirects=False,
        ) as upstream:
            response = web.StreamResponse(status=upstream.status)
            for name, value in upstream.headers.items():
                if name.lower() not in HOP_BY_HOP:
                    response.headers[name] = value
            await response.prepare(request)
            streamed = upstream.headers.get("Content-Type", "").startswith("text/event-stream")
            data_lines = 0
            async for line in upstream.content:
                await response.write(line)
                if streamed and line.startswith(b"data:"):
                    data_lines += 1
                    if data_lines == self.stream_lines_before_hold:
                        await self.streams.hold()
            await response.write_eof()
            return response


@asynccontextmanager
async def gate_proxy(upstream: str) -> AsyncIterator[GateProxy]:
    """A :class:`GateProxy` to ``upstream`` on 127.0.0.1 (a free port) for the block; every
    gate opens on exit so nothing is left waiting."""
    proxy = GateProxy(upstream)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy.forward)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    proxy.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        async with ClientSession(auto_decompress=False) as session:
            proxy.session = session
            yield proxy
    finally:
        proxy.images.opened.set()
        proxy.streams.opened.set()
        await runner.cleanup()
