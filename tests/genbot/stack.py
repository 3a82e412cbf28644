"""The real genbot behind the web playground, for end-to-end tests.

``real_stack(tmp_path)`` starts the provider simulator and a genbot made by
:func:`genbot.runtime.running` (storage in ``tmp_path``, the real core, the web adapter on a free
port, the webhook receiver on loopback), exactly as ``genbot demo`` wires them.
:class:`PlaygroundUser` is one browser session talking to the playground's HTTP API, and
:class:`ChannelView` folds a channel's server-sent events into the messages a browser would show.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import ClientResponse, ClientSession, CookieJar

from adapters.web.settings import WebSettings
from bot.kernel import LimitsSettings, PromptsSettings
from genbot.demo import demo_settings
from genbot.runtime import Runtime, running
from genbot.settings import Settings
from simulator.server import RunningSimulator, serve
from simulator.state import Dialect, SimulatorConfig
from tests.adapters.web.fakes import SseEvent, SseReader

T = TypeVar("T")
FAST_POLLING = LimitsSettings(poll_interval_min=0.01, poll_interval_max=0.1)
RECHECK = 0.05
Message = dict[str, Any]


@dataclass
class Stack:
    """A running simulator and genbot with its playground."""

    sim: RunningSimulator
    runtime: Runtime

    @property
    def url(self) -> str:
        return self.runtime.web_url


@asynccontextmanager
async def real_stack(
    tmp_path: Path,
    *,
    time_scale: float = 0.01,
    dialect: Dialect = "default",
    limits: LimitsSettings = FAST_POLLING,
    plan: str = "developer",
    demo: bool = False,
    port: int = 0,
    clock_start: float | None = None,
    prompts: PromptsSettings | None = None,
) -> AsyncIterator[Stack]:
    """The simulator (speaking ``dialect``) and genbot (real core, web adapter on
    127.0.0.1:0, ``limits``: fast polling by default, on the provider ``plan``; ``demo``: wired
    as ``genbot demo`` wires it, with the admin link; ``port``: the playground's, 0 picks one;
    ``clock_start``: the simulator's time stands still there until the test advances it;
    ``prompts``: what genbot does with prompts, ``[prompts]``)."""
    config = SimulatorConfig(
        time_scale=time_scale,
        insecure_webhooks=True,
        dialect=dialect,
        clock_start=clock_start,
    )
    async with serve(config) as sim:
        base = Settings(
            web=WebSettings(enabled=True, port=port),
            limits=limits,
            prompts=prompts or PromptsSettings(),
        )
        settings = demo_settings(base, sim.base_url, config.api_key, tmp_path)
        api = settings.api.model_copy(update={"plan": plan})
        settings = settings.model_copy(update={"api": api})
        async with running(settings, demo=demo) as runtime:
            yield Stack(sim, runtime)


def labels(message: Message) -> list[list[str]]:
    """A message's button labels, row by row."""
    return [[button["label"] for button in row] for row in message["buttons"]]


def button(message: Message, label: str) -> str:
    """The custom id of the button labelled ``label``."""
    for row in message["buttons"]:
        for candidate in row:
            if candidate["label"] == label:
                return str(candidate["custom_id"])
    raise AssertionError(f"no button {label!r} on message {message['id']}: {labels(message)}")


@dataclass
class ChannelView:
    """What a browser watching one channel knows: every event, and each message's latest state."""

    reader: SseReader
    events: list[dict[str, Any]] = field(default_factory=list)
    messages: dict[str, Message] = field(default_factory=dict)
    _reading: asyncio.Task[SseEvent] | None = field(default=None, repr=False)

    async def until(self, predicate: Callable[[], T | None], timeout: float = 10.0) -> T:
        """Read events until ``predicate()`` is truthy; return its value (bounded wait).
        ``predicate`` is also checked every :data:`RECHECK` without an event, so one
        over other state (the simulator's) holds when no event follows its change; the event
        being read then is kept for the next wait."""
        async with asyncio.timeout(timeout):
            while not (found := predicate()):
                if self._reading is None:
                    self._reading = asyncio.ensure_future(self.reader.next(None))
                done, _ = await asyncio.wait({self._reading}, timeout=RECHECK)
                if done:
                    reading, self._reading = self._reading, None
                    self._take(reading.result().data)
        return found

    def close(self) -> None:
        """Stop the read under way, if any."""
        if self._reading is not None:
            self._reading.cancel()
            self._reading = None

    def _take(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if "message" in event:
            self.messages[event["message"]["id"]] = event["message"]

    def after(self, message_id: str) -> list[Message]:
        """Messages shown after ``message_id``, in order."""
        ids = list(self.messages)
        if message_id not in ids:
            return []
        return [self.messages[i] for i in ids[ids.index(message_id) + 1 :]]

    def with_buttons(self, since: str, first_label: str) -> Message | None:
        """The first message after ``since`` whose first button is ``first_label``."""
        for message in self.after(since):
            if message["buttons"] and message["buttons"][0][0]["label"] == first_label:
                return message
        return None

    def events_of(self, message_id: str) -> list[dict[str, Any]]:
        """The post and edit events of one message, in order."""
        return [e for e in self.events if e.get("message", {}).get("id") == message_id]

    def handled(self, event_id: str) -> bool:
        """Whether the core has finished handling the request ``event_id``."""
        return any(
            e["type"] == "working" and e["event_id"] == event_id and not e["active"]
            for e in self.events
        )


class PlaygroundUser:
    """One browser session (cookie kept) on the playground's HTTP API."""

    def __init__(self, url: str) -> None:
        self.session = ClientSession(base_url=url, cookie_jar=CookieJar(unsafe=True))
        self._streams: list[ClientResponse] = []
        self._views: list[ChannelView] = []

    async def close(self) -> None:
        for view in self._views:
            view.close()
        for response in self._streams:
            response.close()
        await self.session.close()

    async def watch(self, channel: str = "general") -> ChannelView:
        """Open the channel's event stream (after its ``hello``, nothing later is missed)."""
        response = await self.session.get("/api/events", params={"channel": channel})
        assert response.status == 200, await response.text()
        self._streams.append(response)
        reader = SseReader(response)
        assert (await reader.next()).data["type"] == "hello"
        view = ChannelView(reader)
        self._views.append(view)
        return view

    async def post(self, path: str, body: dict[str, Any]) -> str:
        """POST an action; the accepted event id (the test fails on anything but 202)."""
        async with self.session.post(path, json=body) as response:
            answer = await response.json()
            assert response.status == 202, answer
            return str(answer["event_id"])

    async def refused(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST an action the playground must refuse at once; its 400 answer."""
        async with self.session.post(path, json=body) as response:
            answer: dict[str, Any] = await response.json()
            assert response.status == 400, answer
            return answer

    async def command(self, text: str) -> str:
        return await self.post("/api/command", {"text": text})

    async def message(self, text: str, channel: str | None = None) -> str:
        body = {"text": text} if channel is None else {"text": text, "channel": channel}
        return await self.post("/api/message", body)

    async def dm_channel(self) -> str:
        """This user's direct messages with genbot."""
        async with self.session.get("/api/history") as response:
            assert response.status == 200, await response.text()
            return str((await response.json())["dm"])

    async def press(self, message: Message, label: str) -> str:
        body = {"message_id": message["id"], "custom_id": button(message, label)}
        return await self.post("/api/button", body)


@asynccontextmanager
async def playground_user(url: str) -> AsyncIterator[PlaygroundUser]:
    """A browser session that loaded the page (which gives it its identity)."""
    user = PlaygroundUser(url)
    try:
        async with user.session.get("/") as page:
            assert page.status == 200, await page.text()
        yield user
    finally:
        await user.close()
