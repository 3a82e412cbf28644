"""What a playground process tells the others when it saves a message, besides the message's
id: enough for a process that does not show the message's channel to skip reading it (it reads
the messages of the channels its browsers watch and those it holds)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

MOST_BYTES: Final = 1000
"""The longest notice sent; a longer one is sent empty (its message is then read, as an earlier
genbot's), so a save never fails on PostgreSQL's 8000-byte limit of a notice."""


@dataclass(frozen=True)
class Notice:
    """A save of message ``message_id`` in ``channel`` (None: the notice did not say, as an
    earlier genbot's); ``news`` when browsers mark the channel unread for it (a new message,
    or a result: images gained), for the users ``visible_to`` admits, ``mention`` flagged.
    Its :meth:`text` is at most :data:`MOST_BYTES` long."""

    message_id: str
    channel: str | None
    news: bool = False
    mention: str | None = None
    visible_to: str | None = None

    def text(self) -> str:
        """The notice as the other processes receive it (compact JSON; empty when it would be
        longer than :data:`MOST_BYTES`)."""
        told: dict[str, object] = {"c": self.channel}
        if self.news:
            told.update(n=1, m=self.mention, v=self.visible_to)
        text = json.dumps(told, separators=(",", ":"))
        return text if len(text) <= MOST_BYTES else ""

    @classmethod
    def read(cls, message_id: str, text: str) -> Notice:
        """The notice sent as ``text`` (one that says nothing readable: its channel None)."""
        try:
            told = json.loads(text)
        except ValueError:
            return cls(message_id, None)
        if not isinstance(told, dict) or not isinstance(told.get("c"), str):
            return cls(message_id, None)
        mention, visible_to = told.get("m"), told.get("v")
        return cls(
            message_id,
            told["c"],
            news=bool(told.get("n")),
            mention=mention if isinstance(mention, str) else None,
            visible_to=visible_to if isinstance(visible_to, str) else None,
        )
