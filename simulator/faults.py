"""The middleware that logs every request and injects faults the way real servers fail.

With ``--fault-rate R`` each request to the provider API (POSTs; never ``/_sim/*`` or image
downloads) fails with probability R, the kind drawn once per request from a seeded generator:
``error_500`` (HTTP 500 with a JSON body), ``reset`` (the TCP connection is reset, no answer),
``slow`` (the answer comes after ``slow_seconds``) and, for streamed chat only, ``cut_stream``
(left to the chat handler: its ``state.roll_fault(("cut_stream",))`` returns the middleware's
draw). On creation endpoints a 500 or reset strikes either before anything is created or after
the task was created and charged (the answer is lost); the log entry's ``fault_phase`` says which.
With ``fault_reads`` off, fetch and multi_fetch are never failed and draw no dice.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from simulator.state import REQUEST_RECORD, STATE, FaultKind

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CHAT_PATH = "/v1/chat/completions"
TASK_CREATIONS = ("imagine", "reroll", "upscale", "variation", "inpaint", "outpaint", "pan")
CREATION_PATHS = frozenset(
    [f"/gen/v2/{name}" for name in (*TASK_CREATIONS, "describe", "blend", "seed")]
    + [f"/diff/{name}" for name in ("txt2img", "img2img", "upscale", "controlnet")]
)


def _logged_body(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return raw.decode("utf-8", errors="replace")


READ_PATHS = frozenset(("/gen/v2/fetch", "/gen/v2/multi_fetch"))


def _allowed(request: web.Request, body: Any) -> tuple[FaultKind, ...]:
    if request.method != "POST":
        return ()
    if request.path in READ_PATHS and not request.app[STATE].config.fault_reads:
        return ()
    if request.path == CHAT_PATH and isinstance(body, dict) and body.get("stream") is True:
        return ("error_500", "reset", "slow", "cut_stream")
    return ("error_500", "reset", "slow")


def reset_connection(request: web.Request) -> None:
    """Abort the request's TCP connection with a reset (RST), as a crashing server would."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


def server_error() -> web.Response:
    """The JSON 500 answer of an injected ``error_500``."""
    return web.json_response(
        {"error": {"message": "simulated internal server error; please retry"}}, status=500
    )


@web.middleware
async def fault_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Log the request in ``state.requests``, hold it while its path is held
    (:meth:`~simulator.state.SimulatorState.hold`) and maybe inject a fault (see the module
    doc)."""
    if request.path.startswith("/_sim/"):
        return await handler(request)
    state = request.app[STATE]
    body = _logged_body(await request.read()) if request.can_read_body else None
    entry = state.record(request.method, request.path, body)
    entry.account = state.account_named(request)
    entry.fault = state.draw_fault(_allowed(request, body))
    request[REQUEST_RECORD] = entry
    held = state.holds.get(request.path)
    if held is not None:
        await held.wait()
    with state.request_scope(entry):
        if entry.fault == "slow":
            await asyncio.sleep(state.config.slow_seconds)
        elif entry.fault in ("error_500", "reset"):
            if request.path in CREATION_PATHS:
                entry.fault_phase = state.roll_fault_phase()
                if entry.fault_phase == "after_create":
                    await handler(request)
            if entry.fault == "reset":
                reset_connection(request)
                return web.Response(status=500)
            entry.status = 500
            return server_error()
        try:
            response = await handler(request)
        except web.HTTPException as error:
            entry.status = error.status
            raise
    entry.status = response.status
    return response
