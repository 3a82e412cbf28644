"""Slack's redeliveries of Events API events, and replays of signed requests, answered once.

Slack sends an event again when the app was slow to answer (``X-Slack-Retry-Reason:
http_timeout``) or a delivery failed; :class:`Redeliveries` is a bolt middleware that lets each
``event_id`` through once. A retry for ``http_timeout`` is dropped even when unseen: the first
delivery is still running here or ran before a restart. Retries after failed connections are
handled once.

Slash commands, button presses and form submissions carry a ``trigger_id`` Slack issues once
per user action, so each one is let through once too: a signed request replayed within its
five minutes (the same body and signature, sent again by whoever saw it) starts nothing more.

With :class:`~adapters.slack.ports.EventDedupe` (genbot's store) the event ids live in the
database too, so an event Slack delivers twice to different processes (HTTP behind a load
balancer, a retry that lands elsewhere, Socket Mode connections of several processes) is handled
by one of them.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from adapters.slack.ports import EventDedupe
from bot.kernel import StorageError

log = logging.getLogger(__name__)

SEEN_EVENTS_MAX = 4096


class Redeliveries:
    """Remembers the newest ``SEEN_EVENTS_MAX`` event ids of this process, and every event id
    the cluster handled in ``dedupe`` when given."""

    def __init__(self, dedupe: EventDedupe | None = None) -> None:
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._dedupe = dedupe

    async def skip(
        self, body: dict[str, Any], req: AsyncBoltRequest, next: Callable[[], Awaitable[None]]
    ) -> BoltResponse | None:
        """bolt middleware: answer a redelivered event or a replayed request with an empty 200,
        else go on."""
        event_id = delivery_id(body)
        if not event_id:
            await next()
            return None
        retry_num = header(req.headers, "x-slack-retry-num")
        reason = header(req.headers, "x-slack-retry-reason")
        is_retry = retry_num.isdigit() and int(retry_num) > 0
        if event_id in self._seen or (is_retry and reason == "http_timeout"):
            log.info("Skipping repeated Slack request %s (retry %s)", event_id, retry_num or 0)
            return BoltResponse(status=200, body="")
        self._seen[event_id] = None
        while len(self._seen) > SEEN_EVENTS_MAX:
            self._seen.popitem(last=False)
        if not await self._first_in_cluster(event_id):
            log.info("Skipping Slack event %s: another genbot process handled it", event_id)
            return BoltResponse(status=200, body="")
        await next()
        return None

    async def _first_in_cluster(self, event_id: str) -> bool:
        """Whether no process handled ``event_id`` yet (true when the database fails: a rare
        duplicate answer beats a lost one)."""
        if self._dedupe is None:
            return True
        try:
            return await self._dedupe.remember_event("slack", event_id)
        except StorageError as error:
            log.warning("Slack event %s: the shared dedupe is unavailable: %s", event_id, error)
            return True


def delivery_id(body: Mapping[str, Any]) -> str | None:
    """What names one user action behind ``body``: an event's ``event_id``, else the
    ``trigger_id`` of a slash command, press or form submission (``trigger:…``)."""
    if body.get("type") == "event_callback":
        event_id = body.get("event_id")
        return str(event_id) if event_id else None
    trigger = body.get("trigger_id")
    return f"trigger:{trigger}" if trigger else None


def header(headers: Mapping[str, Any], name: str) -> str:
    """One request header as text (bolt gives lists)."""
    value = headers.get(name)
    if isinstance(value, list | tuple):
        value = value[0] if value else None
    return str(value) if value is not None else ""
