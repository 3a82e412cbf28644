"""genbot's activity on Slack, on its status line: ``assistant.threads.setStatus`` in the
thread where the answer will appear ("genbot is thinking…", "genbot is drawing…", with rotating
loading messages).

The thread is the place's, else the one bolt's ``say_stream`` would stream into (the message
being answered); a DM's later calls without that message find the thread genbot used last in
the DM. A thread may want several statuses at once (an answer thinking while a job it started
draws): it shows "thinking" while an answer is being written, else "drawing" while a job runs,
else nothing. Slack clears a thread's status by itself when the app posts in it and after two
minutes without a post: the surface reports its posts (:meth:`StatusLine.posted`), so no call
is spent clearing what Slack cleared, and a status still shown is set again every
``REFRESH_SECONDS`` (for at most ``LONGEST_SECONDS``). Refusals are logged, never raised: a
status is a courtesy.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from slack_sdk.web.async_client import AsyncWebClient

from bot.kernel import N_, ActivityKind, Event, Place, RateLimited, SurfaceError, _

from .calls import Call
from .inbound import SlackOrigin

log = logging.getLogger(__name__)
Clients = Callable[[str], Awaitable[AsyncWebClient]]

STATUS_TEXT: dict[ActivityKind, str] = {
    # Translators: Slack shows it after the app's name: "genbot is thinking…".
    "thinking": N_("is thinking…"),
    # Translators: Slack shows it after the app's name: "genbot is drawing…".
    "drawing": N_("is drawing…"),
}
LOADING_MESSAGES: dict[ActivityKind, list[str]] = {
    "thinking": [
        N_("Reading the conversation…"),
        N_("Thinking it over…"),
        N_("Putting words together…"),
    ],
    "drawing": [N_("Mixing the paints…"), N_("Sketching the grid…"), N_("Adding the details…")],
}
PRIORITY: tuple[ActivityKind, ...] = ("thinking", "drawing")
REFRESH_SECONDS = 90.0
"""Slack drops a status after two minutes without a post: it is set again before that."""
LONGEST_SECONDS = 30 * 60.0


@dataclass
class _Thread:
    team: str
    channel: str
    thread_ts: str
    wanted: Counter[ActivityKind] = field(default_factory=Counter)
    shown: ActivityKind | None = None
    refresher: asyncio.Task[None] | None = None

    def target(self) -> ActivityKind | None:
        return next((status for status in PRIORITY if self.wanted[status] > 0), None)

    def stop_refreshing(self) -> None:
        if self.refresher is not None and self.refresher is not asyncio.current_task():
            self.refresher.cancel()
        self.refresher = None


class StatusLine:
    """The statuses genbot shows in Slack threads."""

    def __init__(self, clients: Clients, call: Call) -> None:
        self._clients = clients
        self._call = call
        self._threads: dict[tuple[str, str], _Thread] = {}
        self._last_in_channel: dict[str, str] = {}

    async def show(self, place: Place, status: ActivityKind, origin: Event | None) -> None:
        """Genbot is ``status`` where the answer to ``origin`` in ``place`` goes."""
        thread = self._thread(place, origin, create=True)
        if thread is None:
            return
        thread.wanted[status] = 1 if status == "thinking" else thread.wanted[status] + 1
        await self._display(thread)

    async def end(self, place: Place, status: ActivityKind, origin: Event | None) -> None:
        """Genbot is no longer ``status`` there."""
        thread = self._thread(place, origin, create=False)
        if thread is None:
            return
        thread.wanted[status] = max(thread.wanted[status] - 1, 0)
        await self._display(thread)
        if thread.target() is None:
            self._threads.pop((thread.channel, thread.thread_ts), None)

    def posted(self, channel: str, thread_ts: str | None) -> None:
        """genbot posted in ``thread_ts``: Slack cleared the thread's status."""
        thread = self._threads.get((channel, thread_ts or ""))
        if thread is not None:
            thread.shown = None
            thread.stop_refreshing()

    async def close(self) -> None:
        """Stop refreshing (the statuses expire on Slack's side)."""
        tasks = [t.refresher for t in self._threads.values() if t.refresher is not None]
        for thread in self._threads.values():
            thread.stop_refreshing()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._threads.clear()

    def _thread(self, place: Place, origin: Event | None, *, create: bool) -> _Thread | None:
        context = origin.context if origin is not None else None
        thread_ts = place.thread_id or (
            context.thread_ts if isinstance(context, SlackOrigin) else None
        )
        if thread_ts is None and place.thread_id is None and not create:
            thread_ts = self._last_in_channel.get(place.channel_id)
        if not thread_ts:
            return None
        if place.thread_id is None:
            self._last_in_channel[place.channel_id] = thread_ts
        key = (place.channel_id, thread_ts)
        if key not in self._threads and not create:
            return None
        return self._threads.setdefault(
            key, _Thread(place.workspace_id, place.channel_id, thread_ts)
        )

    async def _display(self, thread: _Thread) -> None:
        target = thread.target()
        if target == thread.shown:
            return
        thread.stop_refreshing()
        if await self._send(thread, target):
            thread.shown = target
            if target is not None:
                thread.refresher = asyncio.create_task(self._refresh(thread))

    async def _refresh(self, thread: _Thread) -> None:
        elapsed = 0.0
        while elapsed + REFRESH_SECONDS <= LONGEST_SECONDS and thread.shown is not None:
            await asyncio.sleep(REFRESH_SECONDS)
            elapsed += REFRESH_SECONDS
            await self._send(thread, thread.shown)

    async def _send(self, thread: _Thread, status: ActivityKind | None) -> bool:
        try:
            client = await self._clients(thread.team)
            await self._call(
                "assistant.threads.setStatus",
                client.assistant_threads_setStatus(
                    channel_id=thread.channel,
                    thread_ts=thread.thread_ts,
                    status=_(STATUS_TEXT[status]) if status is not None else "",
                    loading_messages=[_(text) for text in LOADING_MESSAGES[status]]
                    if status is not None
                    else None,
                ),
            )
        except (SurfaceError, RateLimited) as error:
            log.info("no status in %s/%s: %s", thread.channel, thread.thread_ts, error)
            return False
        return True
