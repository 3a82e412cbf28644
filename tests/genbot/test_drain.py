"""SIGTERM mid-delivery and mid-stream: ``genbot run`` (web playground) stops taking events,
answers new messages "restarting" and keeps new commands for the next process, lets the result
delivery and the chat stream in progress finish, then exits 0 — the result is posted once and
the answer is whole."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

from bot.kernel import RESTARTING_TEXT
from simulator.server import serve
from tests.genbot.gate_proxy import gate_proxy
from tests.resilience.process import (
    GenbotProcess,
    Playground,
    job_of,
    read_database,
)
from tests.resilience.support import API_KEY, sim_config

ANSWER = "The lighthouse keeper counted every wave that night, one by one, until dawn came."
WAIT = 20.0


def drain_env(api_url: str, database: Path) -> dict[str, str]:
    return {
        "GENBOT_WEB__ENABLED": "true",
        "GENBOT_API__BASE_URL": api_url,
        "GENBOT_API__KEY": API_KEY,
        "GENBOT_STORAGE__PATH": str(database),
        "GENBOT_LIMITS__POLL_INTERVAL_MIN": "0.05",
        "GENBOT_LIMITS__POLL_INTERVAL_MAX": "0.5",
        "GENBOT_RUNTIME__DRAIN_SECONDS": "60",
    }


async def wait_for(event: asyncio.Event, what: str) -> None:
    try:
        async with asyncio.timeout(WAIT):
            await event.wait()
    except TimeoutError:
        raise AssertionError(f"gave up waiting for {what}") from None


async def refused_with_restarting(browser: Playground) -> dict[str, Any]:
    """Send messages to genbot until one is answered "restarting" (the stop is asynchronous)."""
    assert browser.session is not None
    body = {"text": "@genbot are you there?", "channel": browser.channel}
    async with asyncio.timeout(WAIT):
        while True:
            async with browser.session.post(f"{browser.url}/api/message", json=body) as response:
                assert response.status == 202, await response.text()
            async with browser.session.get(
                f"{browser.url}/api/history", params={"channel": browser.channel}
            ) as response:
                messages = (await response.json())["messages"]
            refusals = [m for m in messages if m["text"] == RESTARTING_TEXT]
            if refusals:
                return dict(refusals[0])
            await asyncio.sleep(0.1)


def answer_message(browser: Playground) -> dict[str, Any] | None:
    return next(
        (m for m in browser.messages.values() if m["kind"] == "bot" and m.get("from_model")),
        None,
    )


async def test_sigterm_lets_a_delivery_and_a_stream_in_progress_finish(tmp_path: Path) -> None:
    database = tmp_path / "genbot.db"
    async with serve(sim_config(time_scale=0.01)) as sim, gate_proxy(sim.base_url) as proxy:
        process = GenbotProcess(drain_env(proxy.url, database), tmp_path, "drain")
        try:
            await process.start()
            async with Playground(process.url) as browser:
                await browser.command("/imagine a lighthouse at dusk")
                await wait_for(proxy.images.reached, "the result download")
                await browser.command(f"/chat echo: {ANSWER}")
                await wait_for(proxy.streams.reached, "the streamed answer")
                partial = await browser.until(
                    lambda: (m := answer_message(browser)) and m["text"] != "…" and m, WAIT, "text"
                )
                assert partial["text"] != ANSWER

                assert process.process is not None
                process.process.send_signal(signal.SIGTERM)
                refusal = await refused_with_restarting(browser)
                kept = await browser.command("/chat are you still there?")
                assert process.process.returncode is None
                proxy.streams.opened.set()
                proxy.images.opened.set()
                async with asyncio.timeout(WAIT):
                    status = await process.process.wait()
                await browser.drain()
        finally:
            await process.kill()

    assert status == 0, process.output()
    assert refusal["kind"] == "ephemeral"
    answer = answer_message(browser)
    assert answer is not None and answer["text"] == ANSWER
    results = [job_of(message) for message in browser.results().values()]
    assert len(results) == 1, browser.results()
    [job] = read_database(database, "SELECT id, status FROM jobs")
    assert (job["id"], job["status"]) == (results[0], "posted")
    links = read_database(database, "SELECT kind FROM job_messages WHERE job_id = ?", (job["id"],))
    assert [row["kind"] for row in links].count("result") == 1
    pending = read_database(database, "SELECT id FROM playground_messages WHERE pending")
    assert [row["id"] for row in pending] == [kept], "a command accepted while stopping is kept"
    output = process.output()
    assert "taking no new events" in output and "Traceback" not in output
