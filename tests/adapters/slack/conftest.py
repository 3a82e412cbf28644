"""Fixtures for the Slack adapter: the fake Slack, a recording stand-in for the core, the adapter.

The stand-in records every event the adapter hands over and, when a test gives it a ``script``,
answers through the adapter's surface the way the core would (post an image with buttons, stream
edits, open a modal, send an ephemeral error). Failures inside a script are kept in ``errors``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from adapters.slack import SlackAdapter, SlackSurface
from adapters.slack.settings import SlackSettings
from bot.kernel import InboundEvent, LimitsSettings
from tests.fakes.router import FakeRouter
from tests.fakes.slack import FakeSlack

T = TypeVar("T")
E = TypeVar("E")
Script = Callable[[InboundEvent, SlackSurface], Awaitable[None]]

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00fake image data" * 8


class RecordingCore:
    """A test double of the core: ``handle`` records the event, then runs ``script``."""

    def __init__(self) -> None:
        self.events: list[InboundEvent] = []
        self.errors: list[BaseException] = []
        self.results: list[Any] = []
        self.script: Script | None = None
        self.surface: SlackSurface | None = None
        self._changed = asyncio.Condition()

    async def handle(self, event: InboundEvent) -> None:
        self.events.append(event)
        await self._notify()
        if self.script is not None and self.surface is not None:
            try:
                await self.script(event, self.surface)
            except Exception as error:
                self.errors.append(error)
            await self._notify()

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]

    async def wait_for(self, condition: Callable[[], T | None], timeout: float = 5.0) -> T:
        try:
            async with asyncio.timeout(timeout), self._changed:
                while not (value := condition()):
                    await self._changed.wait()
                return value
        except TimeoutError:
            raise TimeoutError(f"core saw {self.events!r}; errors {self.errors!r}") from None

    async def next_of(self, kind: type[E], count: int = 1, timeout: float = 5.0) -> E:
        """Wait until ``count`` events of ``kind`` arrived; the last of them."""
        found = await self.wait_for(lambda: self.of(kind)[count - 1 :], timeout)
        return found[0]

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()


def slack_settings(
    fake: FakeSlack, *, socket_mode: bool = False, distributed: bool = False
) -> SlackSettings:
    """Settings of a genbot on ``fake``: its bot token, or (``distributed``) its OAuth
    client credentials."""
    oauth = {"client_id": fake.client_id, "client_secret": fake.client_secret}
    return SlackSettings.model_validate(
        {
            **(oauth if distributed else {}),
            "bot_token": "" if distributed else fake.bot_token,
            "app_token": fake.app_token if socket_mode else "",
            "signing_secret": fake.signing_secret,
            "api_url": fake.api_url,
            "http_host": "127.0.0.1",
            "http_port": 0,
            "admin_ids": ["U2"],
            "open_channel_ids": ["COPEN"],
        }
    )


async def started_adapter(
    fake: FakeSlack,
    core: RecordingCore,
    *,
    socket_mode: bool = False,
    limits: LimitsSettings | None = None,
) -> SlackAdapter:
    adapter = SlackAdapter(
        slack_settings(fake, socket_mode=socket_mode), limits or LimitsSettings()
    )
    core.surface = adapter.surface
    await adapter.start(FakeRouter(core, [adapter.surface]))
    return adapter


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as slack:
        yield slack


@pytest.fixture
def core() -> RecordingCore:
    return RecordingCore()


@pytest.fixture
async def adapter(fake: FakeSlack, core: RecordingCore) -> AsyncIterator[SlackAdapter]:
    running = await started_adapter(fake, core)
    yield running
    await running.stop()
    assert core.errors == []


@pytest.fixture
def url(adapter: SlackAdapter) -> str:
    assert adapter.events_url is not None
    return adapter.events_url


@pytest.fixture
def errors_fail_the_test(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fail the test when something logged an error (handler exceptions are only logged)."""
    caplog.set_level(logging.WARNING)
    yield
    logged = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.ERROR]
    assert logged == []
