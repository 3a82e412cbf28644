"""Keyed messages on Slack, which does not deduplicate posts by itself.

A message with a key (a job's result or failure report) carries it as message metadata
(``event_type`` ``genbot_message``). When an earlier attempt may have reached Slack, the
surface reads the recent messages of the place with ``include_all_metadata`` and collects what
that attempt left there: :class:`EarlierPost`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

EVENT_TYPE = "genbot_message"


def key_metadata(key: str) -> dict[str, Any]:
    """The ``metadata`` argument of ``chat.postMessage`` for a message with ``key``."""
    return {"event_type": EVENT_TYPE, "event_payload": {"key": key}}


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
