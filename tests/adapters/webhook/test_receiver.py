"""The webhook receiver over real HTTP, in front of the real tracker: the job id and the
secret (at the bare address: the secret header's presence) are checked before a byte of the
body is read; bodies are bounded."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp

from adapters.webhook.receiver import MAX_BODY_BYTES, SECRET_HEADER
from simulator.state import SimulatorConfig
from simulator.task_model import fetch_record
from storage import Job
from tests.bot.harness import Genbot, harness

MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000, insecure_webhooks=True)
WAIT = 10.0


async def in_flight_job(bot: Genbot) -> Job:
    await bot.actor().command("imagine", prompt="a red fox")
    return await bot.latest_job()


async def head_only(port: int, path: str, secret: str | None, length: int) -> bytes:
    """Send a POST's head announcing ``length`` body bytes, none of them (with ``secret`` in
    the secret header, or no such header); the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    header = "" if secret is None else f"{SECRET_HEADER}: {secret}\r\n"
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{header}"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n".encode()
    )
    try:
        async with asyncio.timeout(WAIT):
            return await reader.readuntil(b"\r\n\r\n")
    finally:
        writer.close()


async def test_a_wrong_secret_is_refused_before_the_body_is_sent(tmp_path: Path) -> None:
    async with harness(tmp_path, webhooks=True, sim_config=MANUAL) as bot:
        job = await in_flight_job(bot)
        port, path = bot.settings.webhook.port, f"/webhooks/tasks/{job.id}"

        answer = await head_only(port, path, "wrong-secret", 1_000_000)
        unknown = await head_only(port, "/webhooks/tasks/nosuchjob", "wrong-secret", 1_000_000)

        assert answer.startswith(b"HTTP/1.1 401"), answer
        assert unknown.startswith(b"HTTP/1.1 401"), unknown
        assert b"Connection: close" in answer


async def test_the_bare_address_refuses_a_request_without_a_secret_before_the_body_is_sent(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, webhooks=True, sim_config=MANUAL) as bot:
        port = bot.settings.webhook.port

        bare = [await head_only(port, path, None, 1_000_000) for path in ("/", "/webhooks/tasks")]
        empty = await head_only(port, "/", "", 1_000_000)

        for answer in [*bare, empty]:
            assert answer.startswith(b"HTTP/1.1 401"), answer
            assert b"Connection: close" in answer


async def test_an_oversized_body_is_refused_and_a_real_one_applied(tmp_path: Path) -> None:
    async with harness(tmp_path, webhooks=True, sim_config=MANUAL) as bot:
        job = await in_flight_job(bot)
        secret = await bot.jobs.starter.webhook_secrets.of(job) or ""
        port, path = bot.settings.webhook.port, f"/webhooks/tasks/{job.id}"

        too_big = await head_only(port, path, secret, MAX_BODY_BYTES + 1)
        assert too_big.startswith(b"HTTP/1.1 413"), too_big

        bot.sim.advance(120)
        record = fetch_record(bot.sim.state.tasks[job.provider_id or ""], bot.sim.state.now())
        url = f"{bot.settings.webhook.public_url}{path}"
        async with (
            aiohttp.ClientSession() as http,
            http.post(url, data=json.dumps(record), headers={SECRET_HEADER: secret}) as response,
        ):
            assert response.status == 200
        done = await bot.settled(job.id)
        assert done.status == "posted" and done.last_webhook_at is not None
