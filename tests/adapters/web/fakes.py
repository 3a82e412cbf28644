"""Test doubles for the web playground: a recording core and a server-sent events reader.

``RecordingCore`` stands in for the core: it records every event and answers through the
surface like the real core would (progress edits, an image grid with buttons, a streamed
Markdown answer, ephemeral replies, modals), so tests see the adapter's whole round trip.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import ClientResponse, ClientSession, FormData
from PIL import Image, ImageDraw

from bot.kernel import (
    MODAL_ACTIONS,
    Button,
    ButtonPress,
    Command,
    ImageFile,
    InboundEvent,
    Modal,
    ModalField,
    ModalSubmit,
    OutMessage,
    Surface,
    UserMessage,
)

STREAMED_ANSWER = (
    "Here is a **tiny** example:\n\n```python\nprint('hello, fox')\n```\n\n- short\n- *sweet*"
)


def png(width: int = 8, height: int = 8, color: tuple[int, int, int] = (40, 90, 200)) -> bytes:
    """A real PNG image."""
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


def grid_png(size: int = 512) -> bytes:
    """A 2x2 grid of four gradient "images", like a Midjourney grid."""
    image = Image.new("RGB", (size, size))
    draw = ImageDraw.Draw(image)
    half = size // 2
    palettes = [
        ((18, 32, 71), (240, 170, 80)),
        ((10, 50, 60), (120, 210, 220)),
        ((40, 20, 60), (250, 120, 150)),
        ((20, 40, 30), (200, 230, 140)),
    ]
    for index, (top, bottom) in enumerate(palettes):
        x0, y0 = (index % 2) * half, (index // 2) * half
        for y in range(half):
            t = y / half
            color = tuple(int(a + (b - a) * t) for a, b in zip(top, bottom, strict=True))
            draw.line([(x0, y0 + y), (x0 + half - 1, y0 + y)], fill=color)
        cx = x0 + half // 2
        draw.polygon(
            [
                (cx - 14, y0 + half - 20),
                (cx + 14, y0 + half - 20),
                (cx + 6, y0 + 60),
                (cx - 6, y0 + 60),
            ],
            fill=(235, 235, 225),
        )
        draw.ellipse([(cx - 10, y0 + 44), (cx + 10, y0 + 64)], fill=(255, 230, 140))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def grid_buttons(ref: str) -> tuple[tuple[Button, ...], ...]:
    """The buttons under a grid: U1..U4 and 🔄, then V1..V4."""
    upscales = tuple(Button(f"U{i}", f"upscale{i}", ref) for i in range(1, 5))
    variations = tuple(Button(f"V{i}", f"variation{i}", ref) for i in range(1, 5))
    return (*upscales, Button("🔄", "reroll", ref, "primary")), variations


def upscale_buttons(ref: str) -> tuple[tuple[Button, ...], ...]:
    return (
        (
            Button("Vary (Strong)", "high_variation", ref),
            Button("Vary (Subtle)", "low_variation", ref),
            Button("Vary (Region)", "vary_region", ref),
        ),
        (
            Button("Zoom Out 2x", "outpaint_2", ref),
            Button("Custom Zoom", "outpaint_custom", ref),
            Button("Make Square", "outpaint_square", ref),
        ),
    )


def zoom_modal(action: str, ref: str) -> Modal:
    return Modal(
        title={"outpaint_custom": "Custom Zoom", "vary_region": "Vary (Region)"}.get(
            action, "Settings"
        ),
        action=action,
        ref=ref,
        fields=(
            ModalField("prompt", "Prompt", default="a lighthouse", multiline=True, max_length=200),
            ModalField("zoom", "Zoom", placeholder="1.0 to 2.0", max_length=4),
            ModalField("note", "Note", required=False, max_length=20),
        ),
    )


class RecordingCore:
    """Records events and answers through :attr:`surface` (set it to the adapter)."""

    def __init__(self, edit_pause: float = 0.0) -> None:
        self.surface: Surface | None = None
        self.events: list[InboundEvent] = []
        self.edit_pause = edit_pause
        self._arrived = asyncio.Event()

    async def wait_for_events(self, count: int, timeout: float = 5.0) -> list[InboundEvent]:
        """The recorded events once there are at least ``count`` (bounded wait)."""
        async with asyncio.timeout(timeout):
            while len(self.events) < count:
                self._arrived.clear()
                await self._arrived.wait()
        return self.events

    async def handle(self, event: InboundEvent) -> None:
        self.events.append(event)
        self._arrived.set()
        assert self.surface is not None
        if isinstance(event, Command):
            await self._command(event)
        elif isinstance(event, UserMessage):
            await self._stream(event, STREAMED_ANSWER)
        elif isinstance(event, ButtonPress):
            await self._button(event)
        elif isinstance(event, ModalSubmit):
            values = ", ".join(f"{k}={v}" for k, v in event.values.items())
            await self.surface.send(event.place, OutMessage(f"Zooming ({values})"), origin=event)

    async def _command(self, event: Command) -> None:
        assert self.surface is not None
        if event.name == "imagine":
            await self.surface.typing(event.place)
            head = f"**{event.text}**"
            ref = await self.surface.send(
                event.place, OutMessage(f"{head} — Waiting to start…"), origin=event
            )
            for percent in (25, 50):
                await self._pause()
                await self.surface.edit(ref, OutMessage(f"{head} — {percent}%"))
            final = OutMessage(
                f"{head} — (fast)",
                images=(ImageFile("grid.png", grid_png(64)),),
                buttons=grid_buttons("job1"),
                mention_user_id=event.user.id,
            )
            await self.surface.edit(ref, final)
        elif event.name == "chat":
            if event.text == "hang":
                await asyncio.sleep(60)
            if event.text == "timeout":
                raise TimeoutError("the provider did not answer")
            if event.text == "thread":
                opener = OutMessage("Let's talk about it in a thread.")
                ref = await self.surface.send(event.place, opener, origin=event)
                place = await self.surface.start_thread(ref, "Fox names")
                event = replace(event, place=place)
            await self._stream(event, STREAMED_ANSWER)
        elif event.name == "help":
            await self.surface.send_ephemeral(event, "genbot can **chat** and **imagine**.")
        elif event.name == "settings":
            await self.surface.open_modal(event, zoom_modal("settings", "user"))
        elif event.name == "usage":
            raise RuntimeError("simulated core failure with secret sk-123")
        else:
            await self.surface.send(event.place, OutMessage(f"ran /{event.name}"), origin=event)

    async def _stream(self, event: Command | UserMessage, answer: str) -> None:
        assert self.surface is not None
        ref = await self.surface.send(event.place, OutMessage("…", from_model=True), origin=event)
        for end in range(len(answer) // 3, len(answer) + 1, len(answer) // 3):
            await self._pause()
            await self.surface.edit(ref, OutMessage(answer[:end], from_model=True))
        await self.surface.edit(ref, OutMessage(answer, from_model=True))

    async def _button(self, event: ButtonPress) -> None:
        assert self.surface is not None
        if event.action in MODAL_ACTIONS:
            await self.surface.open_modal(event, zoom_modal(event.action, event.ref))
        elif event.action.startswith("upscale"):
            message = OutMessage(
                f"Image #{event.action[-1]}",
                images=(ImageFile("upscale.png", png(32, 32, (200, 120, 40))),),
                buttons=upscale_buttons("job2"),
            )
            await self.surface.send(event.place, message, origin=event)
        else:
            await self.surface.send(
                event.place, OutMessage(f"pressed {event.action}"), origin=event
            )

    async def _pause(self) -> None:
        await asyncio.sleep(self.edit_pause)


@dataclass
class SseEvent:
    """One server-sent event: its id (when numbered) and its JSON data."""

    id: str | None
    data: dict[str, Any]


class SseReader:
    """Reads server-sent events from a streaming response; comments are counted, not returned."""

    def __init__(self, response: ClientResponse) -> None:
        self.response = response
        self.comments = 0

    async def next(self, timeout: float | None = 5.0) -> SseEvent:
        """The next event (``timeout`` ``None``: however long it takes)."""
        event_id: str | None = None
        data: list[str] = []
        async with asyncio.timeout(timeout):
            while True:
                raw = await self.response.content.readline()
                if not raw:
                    raise EOFError("the event stream ended")
                line = raw.decode().rstrip("\n")
                if line.startswith(":"):
                    self.comments += 1
                elif line.startswith("id: "):
                    event_id = line[4:]
                elif line.startswith("data: "):
                    data.append(line[6:])
                elif line == "" and data:
                    return SseEvent(event_id, json.loads("\n".join(data)))

    async def until(self, predicate: Any, timeout: float = 5.0) -> list[SseEvent]:
        """Events up to and including the first one whose data satisfies ``predicate``."""
        seen: list[SseEvent] = []
        async with asyncio.timeout(timeout):
            while True:
                event = await self.next(timeout)
                seen.append(event)
                if predicate(event.data):
                    return seen


async def history(session: ClientSession, channel: str = "general") -> dict[str, Any]:
    """``GET /api/history`` of ``channel`` as ``session`` sees it."""
    async with session.get("/api/history", params={"channel": channel}) as response:
        assert response.status == 200, await response.text()
        body: dict[str, Any] = await response.json()
        return body


async def post(session: ClientSession, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    """POST ``body`` as JSON; the status and the JSON answer."""
    async with session.post(path, json=body) as response:
        answer: dict[str, Any] = await response.json()
        return response.status, answer


async def upload(session: ClientSession, *files: tuple[str, bytes]) -> tuple[int, dict[str, Any]]:
    """POST images to ``/api/upload`` as multipart ``file`` fields."""
    form = FormData()
    for filename, data in files:
        form.add_field("file", data, filename=filename, content_type="image/png")
    async with session.post("/api/upload", data=form) as response:
        answer: dict[str, Any] = await response.json()
        return response.status, answer


async def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait (bounded) until ``condition()`` holds."""
    async with asyncio.timeout(timeout):
        while True:
            if condition():
                return
            await asyncio.sleep(0.01)
