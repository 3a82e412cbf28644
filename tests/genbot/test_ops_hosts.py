"""The ops listener answers only the ``Host`` names it was given (qa2 D12: a page on any name
that resolves to the machine, DNS rebinding, could read ``/metrics``), and the container's
health check still reaches it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from aiohttp import ClientSession

from bot.kernel import OpsSettings
from genbot.ops import CheckResult, OpsListener

ROOT = Path(__file__).resolve().parents[2]
ROUTES = ("/healthz", "/readyz", "/metrics")
HEALTH_CHECK_SECONDS = 20.0


async def _passes() -> CheckResult:
    return CheckResult(True, "fine")


@asynccontextmanager
async def listening(host: str, allowed: Sequence[str] = ()) -> AsyncIterator[OpsListener]:
    settings = OpsSettings(enabled=True, host=host, port=0, allowed_hosts=list(allowed))
    ops = OpsListener(settings, lambda: {"x": _passes})
    await ops.start()
    try:
        yield ops
    finally:
        await ops.stop()


async def statuses(ops: OpsListener, host: str) -> set[int]:
    """The statuses of the three routes asked with this ``Host``."""
    async with ClientSession() as session:
        found = set()
        for route in ROUTES:
            async with session.get(ops.url + route, headers={"Host": host}) as response:
                found.add(response.status)
                if response.status == 421:
                    assert "[ops] allowed_hosts" in await response.text()
        return found


async def test_only_loopback_names_its_address_and_configured_names_are_answered() -> None:
    async with listening("127.0.0.1", ["genbot:9108", "Metrics.Internal"]) as ops:
        port = ops.port
        for host in (f"127.0.0.1:{port}", "localhost", f"[::1]:{port}", "genbot:9108",
                     "metrics.internal:1234"):  # fmt: skip
            assert await statuses(ops, host) == {200}, host
        for host in ("evil.com", f"evil.com:{port}", "genbot:9999", "10.0.0.7", "", "a b"):
            assert await statuses(ops, host) == {421}, host


async def test_on_every_address_any_address_is_answered_but_no_other_name() -> None:
    async with listening("0.0.0.0") as ops:
        for host in ("10.1.2.3:9108", "[fd00::5]:9108", "127.0.0.1"):
            assert await statuses(ops, host) == {200}, host
        assert await statuses(ops, f"evil.com:{ops.port}") == {421}


async def test_the_container_health_check_is_answered() -> None:
    """The Dockerfile's HEALTHCHECK, run as written against a listener on every address (as
    the image runs it)."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    [command] = re.findall(r"HEALTHCHECK .*\\\n\s+CMD (\[.*\])", dockerfile)
    program, *args = json.loads(command)
    assert program == "python"
    async with listening("0.0.0.0") as ops:
        env = {**os.environ, "GENBOT_OPS__PORT": str(ops.port)}
        checked = await asyncio.create_subprocess_exec(sys.executable, *args, env=env)
        assert await asyncio.wait_for(checked.wait(), HEALTH_CHECK_SECONDS) == 0
