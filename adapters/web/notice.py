"""What a playground process tells the others when it saves a message, besides the message's
id: enough for a process that does not show the message's channel to skip reading it (see
:meth:`adapters.web.playground.Playground._show_saved_elsewhere`)."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Notice:
    """A save of message ``message_id`` in ``channel`` (None: the notice did not say, as an
    earlier genbot's); ``news`` when browsers mark the channel unread for it (a new message,
    or a result: images gained), for the users ``visible_to`` admits, ``mention`` flagged.
    Channel names and user ids are short, so its :meth:`text` is too (a PostgreSQL notice
    holds under 8000 bytes)."""

    message_id: str
    channel: str | None
    news: bool = False
    mention: str | None = None
    visible_to: str | None = None

    def text(self) -> str:
        """The notice as the other processes receive it (compact JSON)."""
        told: dict[str, object] = {"c": self.channel}
        if self.news:
            told.update(n=1, m=self.mention, v=self.visible_to)
        return json.dumps(told, separators=(",", ":"))

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
