"""Keyed messages on Slack, which does not deduplicate posts by itself.

A message with a key (a job's result or failure report) carries it as message metadata
(``event_type`` ``genbot_message``). When an earlier attempt may have reached Slack, the
surface reads the recent messages of the place with ``include_all_metadata`` and collects what
that attempt left there: :class:`EarlierPost`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.kernel import OutMessage, Place

from .calls import Call
from .errors import SlackRefused

log = logging.getLogger(__name__)

EVENT_TYPE = "genbot_message"
HISTORY_LOOKBACK = 100
THREAD_PAGE = 200
THREAD_PAGES = 5
LOOKUP_IMPOSSIBLE = frozenset(
    {"missing_scope", "not_in_channel", "channel_not_found", "thread_not_found"}
)
"""Refusals of the look-up that no retry can cure: the message is posted without it."""


def key_metadata(key: str | None, files: Iterable[str] = ()) -> dict[str, Any] | None:
    """The ``metadata`` argument of ``chat.postMessage`` for a message with ``key`` and the
    ids of the Slack files it shows (what App Home and later edits reuse); ``None`` for a
    message with neither."""
    payload: dict[str, Any] = {}
    if key:
        payload["key"] = key
    files = list(files)
    if files:
        payload["files"] = files
    return {"event_type": EVENT_TYPE, "event_payload": payload} if payload else None


def carries_key(message: Mapping[str, Any], key: str) -> bool:
    """Whether ``message`` (as ``conversations.history`` returns it) was posted with ``key``."""
    metadata = message.get("metadata")
    if not isinstance(metadata, Mapping) or metadata.get("event_type") != EVENT_TYPE:
        return False
    payload = metadata.get("event_payload")
    return isinstance(payload, Mapping) and payload.get("key") == key


@dataclass
class EarlierPost:
    """What earlier attempts at the message with ``key`` left in its place: the keyed message's
    ``ts``, and the ``ts`` of the message sharing each file name (uploads cannot carry metadata,
    but genbot's image names contain the job id)."""

    key: str
    message_ts: str | None = None
    files: dict[str, str] = field(default_factory=dict)
    file_ids: dict[str, str] = field(default_factory=dict)

    def note(self, messages: Iterable[Mapping[str, Any]]) -> None:
        """Take in one page of messages."""
        for message in messages:
            ts = str(message.get("ts") or "")
            if not ts:
                continue
            if self.message_ts is None and carries_key(message, self.key):
                self.message_ts = ts
            for file in message.get("files") or []:
                if isinstance(file, Mapping) and file.get("name"):
                    self.files.setdefault(str(file["name"]), ts)
                    if file.get("id"):
                        self.file_ids.setdefault(str(file["name"]), str(file["id"]))


async def find_earlier(
    client: AsyncWebClient, call: Call, place: Place, message: OutMessage
) -> EarlierPost:
    """What an earlier attempt at ``message`` left in ``place``: looked up only for a keyed
    message that may have reached Slack. A look-up that cannot work at all (a missing scope,
    the channel out of reach) is skipped with a warning; other refusals propagate, so the send
    fails and is retried rather than risk a duplicate."""
    earlier = EarlierPost(message.key or "")
    if not message.key or not message.may_exist:
        return earlier
    try:
        await look_back(client, call, place, earlier)
    except SlackRefused as refused:
        if refused.code not in LOOKUP_IMPOSSIBLE:
            raise
        log.warning(
            "Cannot look for an earlier %s in %s (%s); posting it anyway",
            message.key,
            place.channel_id,
            refused.code,
        )
    return earlier


async def look_back(client: AsyncWebClient, call: Call, place: Place, earlier: EarlierPost) -> None:
    """Read the recent messages of ``place`` into ``earlier``: the newest top-level messages of
    a channel, or the first pages of a thread (``conversations.replies`` reads oldest first)."""
    if place.thread_id is None:
        page = await call(
            "conversations.history",
            client.conversations_history(
                channel=place.channel_id, limit=HISTORY_LOOKBACK, include_all_metadata=True
            ),
        )
        earlier.note(page.get("messages") or [])
        return
    cursor: str | None = None
    for _ in range(THREAD_PAGES):
        page = await call(
            "conversations.replies",
            client.conversations_replies(
                channel=place.channel_id,
                ts=place.thread_id,
                limit=THREAD_PAGE,
                cursor=cursor,
                include_all_metadata=True,
            ),
        )
        earlier.note(page.get("messages") or [])
        cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
        if earlier.message_ts is not None or not page.get("has_more") or cursor is None:
            return


async def files_of(client: AsyncWebClient, call: Call, place: Place, ts: str) -> tuple[str, ...]:
    """The ids of the files message ``ts`` in ``place`` shows: those its metadata names, else
    its own (a file share), else those of its image blocks."""
    if place.thread_id is None or place.thread_id == ts:
        page = await call(
            "conversations.history",
            client.conversations_history(
                channel=place.channel_id,
                latest=ts,
                oldest=ts,
                inclusive=True,
                limit=1,
                include_all_metadata=True,
            ),
        )
    else:
        page = await call(
            "conversations.replies",
            client.conversations_replies(
                channel=place.channel_id,
                ts=place.thread_id,
                latest=ts,
                oldest=ts,
                inclusive=True,
                limit=2,
                include_all_metadata=True,
            ),
        )
    for message in page.get("messages") or []:
        if message.get("ts") != ts:
            continue
        metadata = message.get("metadata") or {}
        named = (metadata.get("event_payload") or {}).get("files") or []
        own = [f.get("id") for f in message.get("files") or [] if isinstance(f, Mapping)]
        return tuple(str(i) for i in (named or own or _block_files(message)) if i)
    return ()


def _block_files(message: Mapping[str, Any]) -> list[str]:
    """The ids of the Slack files ``message``'s image blocks show."""
    ids: list[str] = []
    for block in message.get("blocks") or []:
        if not isinstance(block, Mapping) or block.get("type") != "image":
            continue
        slack_file = block.get("slack_file")
        if isinstance(slack_file, Mapping):
            ids.append(str(slack_file.get("id") or ""))
    return ids
