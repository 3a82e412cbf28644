"""The simulator application: ``create_app`` for tests, ``serve`` on a free port, ``run_forever``
for ``genbot sim``.

Besides the provider API it serves a small control plane under ``/_sim/`` (never faulted, never
logged): ``GET /_sim/stats`` and ``POST /_sim/advance {"seconds": N}``.
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from simulator import chat
from simulator.diffusion import add_diffusion_routes
from simulator.faults import fault_middleware
from simulator.image_routes import add_image_routes
from simulator.state import STATE, SimulatorConfig, SimulatorState
from simulator.tasks import WEBHOOKS, add_task_routes, error_response

SHUTDOWN_TIMEOUT = 2.0


def stats(state: SimulatorState) -> dict[str, Any]:
    """The counts ``GET /_sim/stats`` answers."""
    state.settle()
    now = state.now()
    attempts = state.webhook_attempts
    return {
        "now": now,
        "requests": dict(Counter(r.path for r in state.requests)),
        "faults": dict(Counter(r.fault for r in state.requests if r.fault)),
        "creations": dict(state.creations),
        "accounts": {
            key: {"plan": a.plan, "balance": a.balance, "frozen": a.frozen, "charged": a.charged}
            for key, a in state.accounts.items()
        },
        "tasks": dict(Counter(t.status_at(now) for t in state.tasks.values())),
        "diffusion_jobs": len(state.diffusion_jobs),
        "webhooks": {
            "attempts": len(attempts),
            "delivered": sum(1 for a in attempts if a.delivered),
        },
    }


async def _stats(request: web.Request) -> web.Response:
    return web.json_response(stats(request.app[STATE]))


async def _advance(request: web.Request) -> web.Response:
    try:
        seconds = json.loads(await request.text())["seconds"]
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ValueError
    except (ValueError, KeyError, TypeError):
        return error_response(400, 'send {"seconds": N} with N >= 0')
    state = request.app[STATE]
    state.advance(float(seconds))
    return web.json_response({"now": state.now()})


def create_app(config: SimulatorConfig) -> web.Application:
    """The whole simulated provider: chat, image tasks, diffusion, images and ``/_sim/*``."""
    app = web.Application(middlewares=[fault_middleware])
    app[STATE] = SimulatorState.create(config)
    add_task_routes(app)
    add_diffusion_routes(app)
    add_image_routes(app)
    chat.add_chat_routes(app)
    app.router.add_get("/_sim/stats", _stats)
    app.router.add_post("/_sim/advance", _advance)
    return app


@dataclass(frozen=True)
class RunningSimulator:
    """A simulator serving on ``base_url`` (``http://127.0.0.1:PORT``)."""

    base_url: str
    port: int
    state: SimulatorState
    app: web.Application

    def advance(self, seconds: float) -> None:
        """Move simulated time forward (tasks finish, credits settle, webhooks start)."""
        self.state.advance(seconds)

    async def webhooks_idle(self) -> None:
        """Wait until every webhook delivery started so far has ended."""
        await self.app[WEBHOOKS].idle()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@asynccontextmanager
async def serve(
    config: SimulatorConfig, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[RunningSimulator]:
    """Serve a fresh simulator on ``host:port`` (0 picks a free port) until the block exits."""
    app = create_app(config)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound_port = int(runner.addresses[0][1])
        base_url = f"http://{_url_host(host)}:{bound_port}"
        yield RunningSimulator(base_url, bound_port, app[STATE], app)
    finally:
        await runner.cleanup()


def walkthrough(base_url: str, api_key: str) -> str:
    """Curl commands a new user can paste to try the simulator."""
    json_header = "-H 'Content-Type: application/json'"
    key = f"-H 'X-API-KEY: {api_key}'"
    return "\n".join(
        [
            "",
            "Try it from another terminal (Ctrl-C here stops the simulator):",
            "",
            "  # 1. start an image task (turbo is the fastest mode)",
            f"  curl -s {base_url}/gen/v2/imagine {key} {json_header} \\",
            '       -d \'{"prompt": "a lighthouse at dusk --v 6", "process_mode": "turbo"}\'',
            "",
            '  # 2. fetch it with the task_id printed above until status is "finished"',
            f'  curl -s {base_url}/gen/v2/fetch {json_header} -d \'{{"task_id": "TASK_ID"}}\'',
            "  #    then open task_result.image_url in a browser",
            "",
            "  # 3. chat, streamed as server-sent events",
            f"  curl -sN {base_url}/v1/chat/completions -H 'Authorization: Bearer {api_key}' "
            f"{json_header} \\",
            '       -d \'{"model": "llm-3.5-turbo", "stream": true, '
            '"messages": [{"role": "user", "content": "echo: hello"}]}\'',
            "",
            "  # 4. diffusion text-to-image (small jobs answer at once)",
            f"  curl -s {base_url}/diff/txt2img {key} {json_header} \\",
            '       -d \'{"prompt": "a red fox", "width": "512", "height": "512"}\'',
            "",
            "  # 5. what the simulator has seen and charged",
            f"  curl -s {base_url}/_sim/stats",
            "",
        ]
    )


async def run_forever(config: SimulatorConfig, host: str = "127.0.0.1", port: int = 8787) -> None:
    """Serve until cancelled (Ctrl-C or SIGTERM), printing the listening line and a walkthrough."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    stop_on_term = main is not None and threading.current_thread() is threading.main_thread()
    if stop_on_term and main is not None:
        loop.add_signal_handler(signal.SIGTERM, main.cancel)
    try:
        async with serve(config, host, port) as sim:
            shown_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
            print(
                f"genbot simulator listening on http://{_url_host(host)}:{sim.port} "
                f"(api key: {config.api_key})",
                flush=True,
            )
            print(walkthrough(f"http://{_url_host(shown_host)}:{sim.port}", config.api_key),
                  flush=True)  # fmt: skip
            await asyncio.Event().wait()
    except asyncio.CancelledError:
        print("genbot simulator stopped", flush=True)
    finally:
        if stop_on_term:
            loop.remove_signal_handler(signal.SIGTERM)
