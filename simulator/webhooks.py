"""Webhook delivery: POST the task record when a task finishes or fails, retrying with backoff.

Each delivery runs in a background task owned by :class:`WebhookSender`; stopping the app cancels
whatever is still running and closes the HTTP session.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from simulator.state import SimulatorState, WebhookAttempt

BACKOFF_SECONDS = (1.0, 2.0, 4.0, 8.0, 16.0)


def backoff(attempt: int, time_scale: float) -> float:
    """Real seconds to wait after failed attempt number ``attempt`` (1, 2, 4, … × time_scale)."""
    return BACKOFF_SECONDS[min(attempt, len(BACKOFF_SECONDS)) - 1] * time_scale


class WebhookSender:
    """Delivers webhooks in the background for one simulator instance."""

    def __init__(self, state: SimulatorState) -> None:
        self._state = state
        self._session: aiohttp.ClientSession | None = None
        self._running: set[asyncio.Task[None]] = set()

    def deliver(self, task_id: str, url: str, secret: str, payload: dict[str, Any]) -> None:
        """Start delivering ``payload`` to ``url`` (call from inside the running loop)."""
        task = asyncio.get_running_loop().create_task(self._deliver(task_id, url, secret, payload))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def idle(self) -> None:
        """Wait until every delivery started so far has succeeded or given up."""
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)

    async def close(self) -> None:
        """Cancel deliveries still running and close the HTTP session."""
        for task in list(self._running):
            task.cancel()
        await asyncio.gather(*list(self._running), return_exceptions=True)
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _deliver(self, task_id: str, url: str, secret: str, payload: dict[str, Any]) -> None:
        config = self._state.config
        headers = {"Content-Type": "application/json"}
        if secret:
            headers["x-webhook-secret"] = secret
        body = json.dumps(payload).encode()
        for attempt in range(1, config.webhook_retries + 2):
            status, error = await self._post(url, headers, body)
            record = WebhookAttempt(task_id, url, attempt, status, error, self._state.now())
            self._state.webhook_attempts.append(record)
            if record.delivered or attempt > config.webhook_retries:
                return
            await asyncio.sleep(backoff(attempt, config.time_scale))

    async def _post(
        self, url: str, headers: dict[str, str], body: bytes
    ) -> tuple[int | None, str | None]:
        if self._session is None:
            timeout = aiohttp.ClientTimeout(total=self._state.config.webhook_timeout)
            self._session = aiohttp.ClientSession(timeout=timeout)
        try:
            async with self._session.post(url, data=body, headers=headers) as response:
                await response.read()
                return response.status, None
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            return None, f"{type(error).__name__}: {error}"
