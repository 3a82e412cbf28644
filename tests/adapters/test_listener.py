"""The hardened listener over real sockets on loopback: header and body timeouts, per-route body
limits, the connection cap, and refusals logged at most once per interval."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web

from adapters.listener import ACCEPT_ERROR, Listener, ListenerLimits, body_limit, refused

FAST = ListenerLimits(header_timeout=0.3, body_timeout=0.3, max_connections=8)
WAIT = 10.0
HELD = web.AppKey("held", asyncio.Event)


def make_app(calls: list[str]) -> web.Application:
    release = asyncio.Event()

    async def hello(request: web.Request) -> web.Response:
        calls.append("hello")
        return web.Response(text="hello")

    @body_limit(100)
    async def small(request: web.Request) -> web.Response:
        calls.append("small")
        return web.Response(text=str(len(await request.read())))

    async def forbidden(request: web.Request) -> web.Response:
        refused(request, "wrong secret")
        return web.Response(status=401)

    async def hold(request: web.Request) -> web.Response:
        calls.append("hold")
        if calls.count("hold") == 3:
            request.app[HELD].set()
        await release.wait()
        return web.Response(text="released")

    app = web.Application()
    app[HELD] = asyncio.Event()
    app.router.add_get("/", hello)
    app.router.add_post("/small", small)
    app.router.add_post("/forbidden", forbidden)
    app.router.add_get("/hold", hold)
    return app


@asynccontextmanager
async def listening(limits: ListenerLimits = FAST) -> AsyncIterator[tuple[Listener, list[str]]]:
    calls: list[str] = []
    listener = Listener(make_app(calls), "test listener", limits)
    await listener.start("127.0.0.1", 0)
    try:
        yield listener, calls
    finally:
        await listener.stop()


async def connect(listener: Listener) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    assert listener.port is not None
    return await asyncio.open_connection("127.0.0.1", listener.port)


async def exchange(listener: Listener, raw: bytes) -> bytes:
    """Send ``raw``, then read until the server closes the connection."""
    reader, writer = await connect(listener)
    writer.write(raw)
    async with asyncio.timeout(WAIT):
        answer = await reader.read()
    writer.close()
    return answer


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer else 0


async def get(listener: Listener, path: str = "/") -> int:
    request = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    return status_of(await exchange(listener, request))


async def test_a_connection_without_a_request_head_is_closed() -> None:
    async with listening() as (listener, _):
        answer = await exchange(listener, b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        assert answer == b""
        assert listener.refusals.totals["no request head within 0.3 s"] == 1


async def test_a_slow_body_gets_408() -> None:
    async with listening() as (listener, calls):
        head = b"POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n0123456789"
        answer = await exchange(listener, head)
        assert status_of(answer) == 408
        assert calls == ["small"]


async def test_a_declared_body_above_the_route_limit_is_refused_before_the_handler() -> None:
    async with listening() as (listener, calls):
        head = b"POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n"
        assert status_of(await exchange(listener, head + b"z" * 101)) == 413
        assert calls == []
        chunk = b"x" * 200
        chunked = (
            b"POST /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + f"{len(chunk):x}\r\n".encode()
            + chunk
            + b"\r\n0\r\n\r\n"
        )
        assert status_of(await exchange(listener, chunked)) == 413
        body = b"y" * 100
        fits = b"POST /small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        fits += b"Content-Length: 100\r\n\r\n"
        assert (await exchange(listener, fits + body)).endswith(b"100")


async def test_slow_connections_make_room_for_a_new_one_at_the_cap() -> None:
    limits = ListenerLimits(header_timeout=30, max_connections=8)
    async with listening(limits) as (listener, _):
        slow = await asyncio.gather(*(connect(listener) for _ in range(20)))
        for _, writer in slow:
            writer.write(b"GET / HTTP/1.1\r\n")
        assert await get(listener) == 200
        assert listener.connections <= 8
        made_room = listener.refusals.totals[
            "room made for a new connection (request head too slow)"
        ]
        assert made_room == 20 + 1 - 8, "one connection closed for each one over the cap"
        for _, writer in slow:
            writer.close()


async def test_busy_connections_at_the_cap_get_503() -> None:
    limits = ListenerLimits(header_timeout=30, max_connections=3, shutdown_timeout=0.1)
    async with listening(limits) as (listener, _):
        held = []
        for _ in range(3):
            _, writer = await connect(listener)
            writer.write(b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
            held.append(writer)
        async with asyncio.timeout(WAIT):
            await listener._app[HELD].wait()
        assert await get(listener) == 503
        assert listener.refusals.totals["too many connections"] == 1
        for writer in held:
            writer.close()


async def test_one_client_holds_at_most_its_share_of_connections() -> None:
    """A client whose requests hold three connections (its cap) gets 503 on a fourth; other
    clients are still served (here the cap is the whole listener's eight)."""
    limits = ListenerLimits(header_timeout=30, max_connections=8, max_connections_per_client=3)
    async with listening(limits) as (listener, _):
        held = []
        for _ in range(3):
            _, writer = await connect(listener)
            writer.write(b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
            held.append(writer)
        async with asyncio.timeout(WAIT):
            await listener._app[HELD].wait()
        assert await get(listener) == 503
        assert listener.refusals.totals["too many connections from one client"] == 1
        assert listener.port is not None
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", listener.port, local_addr=("127.0.0.2", 0)
        )
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        async with asyncio.timeout(WAIT):
            assert status_of(await reader.read()) == 200
        for opened in [*held, writer]:
            opened.close()


async def test_a_trickled_body_is_let_go_long_before_the_body_timeout() -> None:
    """A byte every half second is under the floor: 408 once the grace has passed, though the
    body timeout is a minute away; a body arriving briskly is read whole."""
    limits = ListenerLimits(body_timeout=60, body_grace_seconds=0.3, min_body_bytes_per_second=50)
    async with listening(limits) as (listener, _):
        reader, writer = await connect(listener)
        writer.write(b"POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 90\r\n\r\n")
        started = asyncio.get_running_loop().time()

        async def trickle() -> None:
            for _ in range(89):
                writer.write(b"z")
                await asyncio.sleep(0.5)

        trickling = asyncio.create_task(trickle())
        async with asyncio.timeout(WAIT):
            answer = await reader.read()
        trickling.cancel()
        writer.close()
        assert status_of(answer) == 408
        assert asyncio.get_running_loop().time() - started < 5
        assert listener.refusals.totals["body slower than 50 bytes/s"] == 1
        brisk = b"POST /small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        brisk += b"Content-Length: 90\r\n\r\n" + b"y" * 90
        assert (await exchange(listener, brisk)).endswith(b"90")


async def test_refusals_are_logged_once_per_interval_with_a_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "adapters.listener")
    async with listening() as (listener, _):
        for _ in range(30):
            request = b"POST /forbidden HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
            reader, writer = await connect(listener)
            writer.write(request)
            await reader.readuntil(b"\r\n\r\n")
            writer.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "adapters.listener"]
    assert len(lines) == 2, lines
    assert "wrong secret" in lines[0]
    assert "refused 29 more" in lines[1] and "29 × wrong secret" in lines[1]


async def test_accept_errors_are_logged_once_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with listening():
        loop = asyncio.get_running_loop()
        for _ in range(500):
            loop.call_exception_handler(
                {"message": ACCEPT_ERROR, "exception": OSError(24, "Too many open files")}
            )
    lines = [r.getMessage() for r in caplog.records if "Too many open files" in r.getMessage()]
    assert len(lines) == 1, len(lines)
