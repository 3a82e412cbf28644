"""The adapter runner, driven through the real playground over HTTP: intake stops with a
"restarting" answer, a drain lets running events finish and cuts what outlives its deadline,
and messages of one conversation run one at a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import ClientSession, CookieJar

from adapters.runner import AdapterRunner, answers_refusal
from adapters.web import WebAdapter
from adapters.web.settings import WebSettings
from adapters.web.surface import WebSurface
from bot.kernel import RESTARTING_TEXT, Command, InboundEvent, OutMessage, Place, User, UserMessage
from tests.adapters.web.fakes import history, post
from tests.fakes.platform import FakePlatform


@dataclass
class GatedCore:
    """Answers each command with "done <text>" once :attr:`gate` is open; records order."""

    gate: asyncio.Event = field(default_factory=asyncio.Event)
    started: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    surface: WebSurface | None = None
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, event: InboundEvent) -> None:
        assert isinstance(event, Command | UserMessage) and self.surface is not None
        self.started.append(event.text)
        self.arrived.set()
        await self.gate.wait()
        await self.surface.send(event.place, OutMessage(f"done {event.text}"), origin=event)
        self.finished.append(event.text)


@pytest.fixture
async def gated() -> AsyncIterator[tuple[GatedCore, WebAdapter, ClientSession]]:
    core = GatedCore()
    adapter = WebAdapter(WebSettings(host="127.0.0.1", port=0), keepalive_seconds=0.05)
    core.surface = adapter.surface
    await adapter.start(core)
    async with ClientSession(base_url=adapter.url, cookie_jar=CookieJar(unsafe=True)) as browser:
        async with browser.get("/"):
            pass
        yield core, adapter, browser
    await adapter.stop()


async def test_after_intake_stops_a_command_is_answered_restarting_and_not_run_later(
    gated: tuple[GatedCore, WebAdapter, ClientSession],
) -> None:
    core, adapter, browser = gated
    adapter.runner.stop_intake()
    status, _ = await post(browser, "/api/command", {"text": "/chat hello"})
    assert status == 202
    await adapter.runner.drain(5)

    messages = (await history(browser))["messages"]
    assert [m["kind"] for m in messages] == ["user", "ephemeral"]
    assert messages[1]["text"] == RESTARTING_TEXT
    assert core.started == []
    assert adapter.playground.store.get(messages[0]["id"]).pending is False  # type: ignore[union-attr]


async def test_a_drain_lets_running_events_finish(
    gated: tuple[GatedCore, WebAdapter, ClientSession],
) -> None:
    core, adapter, browser = gated
    await post(browser, "/api/command", {"text": "/chat one"})
    await asyncio.wait_for(core.arrived.wait(), 5)
    adapter.runner.stop_intake()
    drain = asyncio.create_task(adapter.runner.drain(10))
    await asyncio.sleep(0)
    assert not drain.done()
    core.gate.set()

    assert await drain == 0
    assert core.finished == ["one"]
    assert [m["text"] for m in (await history(browser))["messages"]][-1] == "done one"


async def test_a_drain_cancels_what_outlives_its_deadline(
    gated: tuple[GatedCore, WebAdapter, ClientSession],
) -> None:
    core, adapter, browser = gated
    await post(browser, "/api/command", {"text": "/chat forever"})
    await asyncio.wait_for(core.arrived.wait(), 5)

    assert await adapter.runner.drain(0.05) == 1
    assert adapter.runner.running == 0
    assert core.finished == []


async def test_events_with_one_serial_key_run_one_at_a_time_in_order(
    gated: tuple[GatedCore, WebAdapter, ClientSession],
) -> None:
    core, adapter, _ = gated
    adapter.runner.serial_key = lambda event: event.place.channel_id
    place = Place("web", "web", "general", None, is_dm=True)
    user = User("u1", "you")
    for text in ("first", "second", "third"):
        adapter.runner.submit(UserMessage(user=user, place=place, message_id=text, text=text))
    await asyncio.wait_for(core.arrived.wait(), 5)
    await asyncio.sleep(0.05)
    assert core.started == ["first"]
    core.gate.set()
    assert await adapter.runner.drain(5) == 0
    assert core.started == core.finished == ["first", "second", "third"]


@pytest.mark.parametrize(
    ("is_dm", "mentions_bot", "answered"),
    [(True, False, True), (False, True, True), (False, False, False)],
)
def test_a_plain_message_is_answered_restarting_only_when_addressed_to_genbot(
    is_dm: bool, mentions_bot: bool, answered: bool
) -> None:
    message = UserMessage(
        user=User("u1", "you"),
        place=Place("slack", "T1", "C1", "171.0", is_dm=is_dm),
        message_id="1",
        text="hi",
        mentions_bot=mentions_bot,
    )
    assert answers_refusal(message) is answered
    assert answers_refusal(Command(user=message.user, place=message.place, name="chat"))


async def test_events_before_the_adapter_serves_the_core_get_the_restarting_answer() -> None:
    platform = FakePlatform()
    runner = AdapterRunner(platform, platform="fake")
    alice = User("alice", "Alice")
    command = Command(user=alice, place=Place("fake", "w", "c1"), name="imagine", text="early")
    with pytest.raises(RuntimeError, match="not started"):
        _ = runner.handler
    assert runner.submit(command) is False
    await runner.drain(5)
    assert platform.ephemerals_for("alice") == [RESTARTING_TEXT]

    handled: list[InboundEvent] = []

    class Core:
        async def handle(self, event: InboundEvent) -> None:
            handled.append(event)

    core = Core()
    runner.serve(core)
    assert runner.handler is core
    assert runner.submit(command) is True
    await runner.drain(5)
    assert handled == [command]
