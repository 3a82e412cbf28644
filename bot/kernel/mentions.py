"""Users and channels genbot's own text names, each drawn by a platform its own way.

The core never writes a platform's syntax: where its text names a user or a channel it puts a
:class:`Mention` (``_("Asked by {user}", user=Mention.user(job.requester_id))``), which stands in
the text as a sealed token, and every adapter draws the tokens of the texts it shows with
:func:`draw_mentions` — Discord and Slack as their native mentions (``<@U1>``, ``<#C1>``), the
playground as the user's and the channel's names. The seal is this process's own, so text that
did not come from a :class:`Mention` (a prompt, the model's words) never draws one: whatever
looks like a token there is dropped.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

MentionKind = Literal["user", "channel"]

_OPEN: Final = "\ue000"
_CLOSE: Final = "\ue001"
_SEAL: Final = secrets.token_hex(6)
_MARKS: Final[dict[MentionKind, str]] = {"user": "u", "channel": "c"}
_KINDS: Final[dict[str, MentionKind]] = {mark: kind for kind, mark in _MARKS.items()}
_TOKEN: Final = re.compile(f"{_OPEN}{_SEAL}([uc])([^{_OPEN}{_CLOSE}\\s]+){_CLOSE}")
_STRAY: Final = re.compile(f"{_OPEN}[^{_OPEN}{_CLOSE}\\s]*{_CLOSE}?|{_CLOSE}")


@dataclass(frozen=True)
class Mention:
    """A user or a channel (``kind``) of the platform the text is shown on, by its ``id``.

    Formatted into a text (``str(mention)``, ``f"{mention}"``, a value of ``_()``) it is a
    token only :func:`draw_mentions` reads."""

    kind: MentionKind
    id: str

    @classmethod
    def user(cls, user_id: str) -> Mention:
        """The user ``user_id``."""
        return cls("user", user_id)

    @classmethod
    def channel(cls, channel_id: str) -> Mention:
        """The channel ``channel_id``."""
        return cls("channel", channel_id)

    def __str__(self) -> str:
        return f"{_OPEN}{_SEAL}{_MARKS[self.kind]}{self.id}{_CLOSE}"


def draw_mentions(text: str, draw: Callable[[Mention], str]) -> str:
    """``text`` with each of its mentions drawn by ``draw``; anything else shaped like a token
    (not sealed here, or cut short) is left out."""
    drawn = _TOKEN.sub(lambda m: draw(Mention(_KINDS[m.group(1)], m.group(2))), text)
    return _STRAY.sub("", drawn)
