"""What a playground process tells the others when it forgets a user (``/forget-me``): the
history deleted the messages about them, so every process drops what it holds of them too."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

KIND: Final = "forgotten"
TEXT: Final = json.dumps({"k": KIND}, separators=(",", ":"))
"""The notice's text, beside the user's id where a save's notice has the message's: a genbot
that does not know it reads it as a save's notice naming no channel, so it looks for a message
with that id, finds none and changes nothing."""


@dataclass(frozen=True)
class Forgotten:
    """The messages about ``user_id`` (theirs, answers to them, those naming them, their DM)
    were deleted from the history, with what the playground held for them."""

    user_id: str

    def text(self) -> str:
        """The notice as the other processes receive it, beside :attr:`user_id`."""
        return TEXT

    @classmethod
    def read(cls, subject: str, text: str) -> Forgotten | None:
        """The forget told as ``text`` beside ``subject``; None when ``text`` tells something
        else (a save: :class:`adapters.web.notice.Notice`)."""
        try:
            told = json.loads(text)
        except ValueError:
            return None
        if not isinstance(told, dict) or told.get("k") != KIND:
            return None
        return cls(subject)
