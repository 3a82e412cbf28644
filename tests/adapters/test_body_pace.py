"""A body's pace on a plain aiohttp server over loopback (no :class:`adapters.listener.Listener`
around it): a body trickling under the floor is ended after the grace, a brisk one is read
whole, and a body the handler is not waiting for yet (it sits in aiohttp's buffer) is never
held against the client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web

from adapters.body_pace import PACE_SECONDS, BodyPace

WAIT = 10.0
GRACE = 0.1


class TooSlow(TimeoutError):
    pass


async def read_paced(request: web.Request) -> web.Response:
    if request.path == "/later":
        await asyncio.sleep(GRACE + 2 * PACE_SECONDS)
    pace = BodyPace(
        request.content, floor_bytes_per_second=50, grace_seconds=GRACE, too_slow=TooSlow
    )
    try:
        body = await request.read()
    except TooSlow:
        return web.Response(status=408, text="too slow")
    finally:
        pace.cancel()
    return web.Response(text=str(len(body)))


@asynccontextmanager
async def serving() -> AsyncIterator[int]:
    app = web.Application()
    app.router.add_post("/now", read_paced)
    app.router.add_post("/later", read_paced)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


async def post(port: int, path: str, chunks: list[bytes], every: float) -> bytes:
    """POST ``chunks`` as one body, ``every`` seconds apart; the answer's last line."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    length = sum(map(len, chunks))
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        f"Content-Length: {length}\r\n\r\n".encode()
    )

    async def send() -> None:
        for chunk in chunks:
            writer.write(chunk)
            await asyncio.sleep(every)

    sending = asyncio.create_task(send())
    try:
        async with asyncio.timeout(WAIT):
            answer = await reader.read()
    finally:
        sending.cancel()
        writer.close()
    return answer.rsplit(b"\r\n", 1)[-1]


async def test_a_body_trickling_under_the_floor_is_ended() -> None:
    async with serving() as port:
        assert await post(port, "/now", [b"z"] * 100, 0.2) == b"too slow"


async def test_a_brisk_body_is_read_whole() -> None:
    async with serving() as port:
        assert await post(port, "/now", [b"y" * 40] * 60, 0.02) == b"2400"


async def test_a_body_nobody_waits_for_is_not_held_against_the_client() -> None:
    async with serving() as port:
        assert await post(port, "/later", [b"x"] * 10, 0.01) == b"10"
