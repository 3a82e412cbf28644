"""Webhooks delivered to a real aiohttp receiver on 127.0.0.1: payload, secret header, retries."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from simulator.webhooks import backoff
from tests.simulator.conftest import Api, running


@dataclass
class Receiver:
    """A webhook receiver that answers with ``statuses`` in turn (then 200)."""

    statuses: list[int] = field(default_factory=list)
    calls: list[tuple[dict[str, str], Any]] = field(default_factory=list)
    url: str = ""
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.Response:
        self.calls.append((dict(request.headers), await request.json()))
        self.arrived.set()
        status = self.statuses.pop(0) if self.statuses else 200
        return web.json_response({"ok": status == 200}, status=status)


@asynccontextmanager
async def receiver(*statuses: int) -> AsyncIterator[Receiver]:
    hook = Receiver(list(statuses))
    app = web.Application()
    app.router.add_post("/hook", hook.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    hook.url = f"http://127.0.0.1:{runner.addresses[0][1]}/hook"
    try:
        yield hook
    finally:
        await runner.cleanup()


async def _settle(api: Api) -> None:
    api.sim.advance(100_000)
    async with asyncio.timeout(10):
        await api.sim.webhooks_idle()


async def test_finished_task_is_posted_with_the_secret_header() -> None:
    async with receiver() as hook, running(time_scale=0.01) as api:
        task_id = await api.create(
            "imagine",
            {"prompt": "a fox", "webhook_endpoint": hook.url, "webhook_secret": "hush"},
        )
        assert hook.calls == []
        await _settle(api)
        [(headers, payload)] = hook.calls
        assert headers["x-webhook-secret"] == "hush"
        assert headers["Content-Type"] == "application/json"
        assert payload == await api.fetch(task_id)
        assert payload["status"] == "finished" and payload["task_result"]["image_url"]


async def test_without_a_secret_no_secret_header_is_sent() -> None:
    async with receiver() as hook, running(time_scale=0.01) as api:
        await api.create("imagine", {"prompt": "a fox", "webhook_endpoint": hook.url})
        await _settle(api)
        [(headers, _)] = hook.calls
        assert "x-webhook-secret" not in {name.lower() for name in headers}


async def test_failed_tasks_are_posted_too() -> None:
    async with receiver() as hook, running(time_scale=0.01) as api:
        await api.create("imagine", {"prompt": "fail", "webhook_endpoint": hook.url})
        await _settle(api)
        [(_, payload)] = hook.calls
        assert payload["status"] == "failed"
        assert payload["task_result"]["error_messages"]


async def test_no_webhook_without_an_endpoint() -> None:
    async with receiver() as hook, running(time_scale=0.01) as api:
        await api.create("imagine", {"prompt": "a fox"})
        await _settle(api)
        assert hook.calls == [] and api.sim.state.webhook_attempts == []


async def test_a_500_from_the_receiver_is_retried() -> None:
    async with receiver(500, 503) as hook, running(time_scale=0.01) as api:
        task_id = await api.create("imagine", {"prompt": "a fox", "webhook_endpoint": hook.url})
        await _settle(api)
        assert len(hook.calls) == 3
        assert [call[1] for call in hook.calls] == [hook.calls[0][1]] * 3
        attempts = api.sim.state.webhook_attempts
        assert [(a.task_id, a.attempt, a.status) for a in attempts] == [
            (task_id, 1, 500),
            (task_id, 2, 503),
            (task_id, 3, 200),
        ]


async def test_delivery_gives_up_after_three_retries() -> None:
    async with receiver(500, 500, 500, 500, 500) as hook, running(time_scale=0.01) as api:
        await api.create("imagine", {"prompt": "a fox", "webhook_endpoint": hook.url})
        await _settle(api)
        assert len(hook.calls) == 4
        assert not any(a.delivered for a in api.sim.state.webhook_attempts)


async def test_connection_errors_are_retried_and_recorded() -> None:
    async with receiver() as hook:
        closed_url = hook.url
    async with running(time_scale=0.01, webhook_retries=1) as api:
        await api.create("imagine", {"prompt": "a fox", "webhook_endpoint": closed_url})
        await _settle(api)
        attempts = api.sim.state.webhook_attempts
        assert [a.attempt for a in attempts] == [1, 2]
        assert all(a.status is None and a.error for a in attempts)


async def test_stopping_the_simulator_cancels_pending_deliveries() -> None:
    async with receiver(500) as hook, asyncio.timeout(5):
        async with running(time_scale=100.0) as api:
            await api.create("imagine", {"prompt": "a fox", "webhook_endpoint": hook.url})
            api.sim.advance(10_000_000)
            await hook.arrived.wait()
        assert len(hook.calls) == 1


def test_backoff_doubles_and_scales_with_time() -> None:
    assert [backoff(n, 1.0) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]
    assert backoff(2, 0.01) == 0.02
