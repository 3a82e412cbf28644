"""The simulator in a child process, so its CPU is not counted against genbot's.

``python -m bench.simproc --time-scale 0.5 [--insecure-webhooks]`` serves the simulator of
:func:`simulator.server.create_app` on a free 127.0.0.1 port, prints ``PORT <n>`` and serves until
its stdin closes. Besides the simulator's own ``/_sim/stats`` it answers
``GET /_bench/tasks``: every image task's ``created_at``, ``ends_at`` (when the provider finished
it, Unix seconds) and outcome, which the tracking benchmark needs to time finished → posted.

:func:`simulator_process` starts one from the benchmark and stops it on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from simulator.server import create_app
from simulator.state import STATE, SimulatorConfig

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


async def _tasks(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return web.json_response(
        {
            task_id: {"created_at": t.created_at, "ends_at": t.ends_at, "outcome": t.outcome}
            for task_id, t in state.tasks.items()
        }
    )


async def serve_until_stdin_closes(config: SimulatorConfig) -> None:
    """Serve the simulator plus ``/_bench/tasks`` until stdin reaches its end."""
    app = create_app(config)
    app.router.add_get("/_bench/tasks", _tasks)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        print(f"PORT {runner.addresses[0][1]}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    finally:
        await runner.cleanup()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.simproc")
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--insecure-webhooks", action="store_true")
    parser.add_argument("--credits", type=int, default=100_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plain-images", action="store_true")
    args = parser.parse_args(argv)
    config = SimulatorConfig(
        time_scale=args.time_scale,
        insecure_webhooks=args.insecure_webhooks,
        credits=args.credits,
        seed=args.seed,
        plain_images=args.plain_images,
    )
    asyncio.run(serve_until_stdin_closes(config))


@dataclass
class SimulatorProcess:
    """A running child simulator: ``base_url`` plus readers of its counters."""

    base_url: str
    session: aiohttp.ClientSession

    async def _get(self, path: str) -> Any:
        async with self.session.get(self.base_url + path) as response:
            response.raise_for_status()
            return await response.json()

    async def stats(self) -> dict[str, Any]:
        """``GET /_sim/stats``: requests per path, creations, accounts, webhooks."""
        answer: dict[str, Any] = await self._get("/_sim/stats")
        return answer

    async def tasks(self) -> dict[str, dict[str, Any]]:
        """``GET /_bench/tasks``: task id → ``created_at``, ``ends_at``, ``outcome``."""
        answer: dict[str, dict[str, Any]] = await self._get("/_bench/tasks")
        return answer


@asynccontextmanager
async def simulator_process(
    *,
    time_scale: float,
    insecure_webhooks: bool = False,
    seed: int = 0,
    plain_images: bool = False,
) -> AsyncIterator[SimulatorProcess]:
    """Start ``python -m bench.simproc`` and stop it when the block exits."""
    arguments = ["--time-scale", str(time_scale), "--seed", str(seed)]
    if insecure_webhooks:
        arguments.append("--insecure-webhooks")
    if plain_images:
        arguments.append("--plain-images")
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.simproc",
        *arguments,
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        async with asyncio.timeout(START_TIMEOUT):
            line = (await child.stdout.readline()).decode().strip()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the simulator did not start (it printed {line!r})")
        async with aiohttp.ClientSession() as session:
            yield SimulatorProcess(f"http://127.0.0.1:{int(line.split()[1])}", session)
    finally:
        child.stdin.close()
        try:
            async with asyncio.timeout(STOP_TIMEOUT):
                await child.wait()
        except TimeoutError:
            child.kill()
            await child.wait()


if __name__ == "__main__":
    main()
