"""A fault-injecting HTTP proxy in front of the simulator: a real peer on 127.0.0.1 that fails
chosen requests the ways a provider can, deterministically.

Faults are queued per path (``proxy.faults["/gen/v2/upscale"] = ["lose"]``); each matching
request takes the next one:

- ``lose``: the request is forwarded (the provider creates the job and charges for it), then
  the proxy answers 500 — the provider's answer is lost;
- ``hang``: the request is forwarded, ``proxy.hung`` is set, and the answer is held until
  ``proxy.release`` is set (or the caller gives up);
- ``bad_request``: the proxy answers 400 without forwarding — nothing reaches the provider;
- ``rate_limited``: the proxy answers 429 without forwarding, with ``Retry-After:
  proxy.retry_after`` (left out when ``None``);
- ``refused``: the proxy answers a creation refused in the body (200 ``status: failed``) with
  ``proxy.refusal`` as its message, without forwarding;
- ``misnamed``: the request is forwarded, and in its answer's ``data`` (a multi_fetch answer)
  the record under each id of ``proxy.renames`` names the task that id maps to, its key
  unchanged;
- ``status``: the proxy answers ``proxy.status`` (with a JSON ``message``) without forwarding.

Every other request is forwarded as is; ``proxy.forwarded`` keeps the path and body of each
request that reached the provider.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

import aiohttp
from aiohttp import web

Fault = Literal["lose", "hang", "bad_request", "rate_limited", "refused", "misnamed", "status"]
HOP_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
HANG_LIMIT = 30.0


class FaultyProxy:
    """See the module docstring."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.faults: dict[str, list[Fault]] = {}
        self.injected: list[tuple[str, Fault]] = []
        self.forwarded: list[tuple[str, bytes]] = []
        self.hung = asyncio.Event()
        self.release = asyncio.Event()
        self.base_url = ""
        self.retry_after: str | None = "1"
        self.refusal = "refused by the test proxy"
        self.renames: dict[str, str] = {}
        self.status = 418
        self._session: aiohttp.ClientSession | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        queued = self.faults.get(request.path) or []
        fault = queued.pop(0) if queued else None
        if fault is not None:
            self.injected.append((request.path, fault))
        if fault == "bad_request":
            return web.json_response({"message": "refused by the test proxy"}, status=400)
        if fault == "refused":
            return web.json_response({"task_id": "", "status": "failed", "message": self.refusal})
        if fault == "rate_limited":
            headers = {"Retry-After": self.retry_after} if self.retry_after is not None else {}
            refusal = {"error": {"message": "slow down (test proxy)"}}
            return web.json_response(refusal, status=429, headers=headers)
        if fault == "status":
            return web.json_response({"message": "odd answer"}, status=self.status)
        answer = await self._forward(request, body)
        if fault == "misnamed":
            return self._misnamed(answer)
        if fault == "lose":
            return web.json_response({"error": {"message": "answer lost"}}, status=500)
        if fault == "hang":
            self.hung.set()
            async with asyncio.timeout(HANG_LIMIT):
                await self.release.wait()
        return answer

    def _misnamed(self, answer: web.Response) -> web.Response:
        assert isinstance(answer.body, bytes)
        parsed = json.loads(answer.body)
        for asked, named in self.renames.items():
            record = parsed.get("data", {}).get(asked)
            if isinstance(record, dict):
                record["task_id"] = named
        return web.json_response(parsed, status=answer.status)

    async def _forward(self, request: web.Request, body: bytes) -> web.Response:
        assert self._session is not None
        self.forwarded.append((request.path, body))
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
        async with self._session.request(
            request.method, self.upstream + request.path_qs, data=body, headers=headers
        ) as upstream:
            data = await upstream.read()
            kind = upstream.headers.get("Content-Type", "application/json")
            return web.Response(status=upstream.status, body=data, headers={"Content-Type": kind})


@asynccontextmanager
async def faulty_proxy(upstream: str) -> AsyncIterator[FaultyProxy]:
    """A running :class:`FaultyProxy` in front of ``upstream``."""
    proxy = FaultyProxy(upstream)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy._handle)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    async with aiohttp.ClientSession() as session:
        proxy._session = session
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        proxy.base_url = f"http://127.0.0.1:{port}"
        try:
            yield proxy
        finally:
            proxy.release.set()
            await runner.cleanup()
