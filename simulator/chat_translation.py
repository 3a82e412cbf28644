"""The simulator's translation into English: a small phrase table, applied word for word.

A request is a translation when one of its system messages asks for one (it contains
``translate`` and ``into English``, in any case). The answer is the last user message with
every phrase of :data:`PHRASES` replaced by its English, longest phrases first, and spaces
tidied; everything else — placeholders like ``[1]``, English words, text the table does not
know — is left as it was (so an unknown Japanese phrase comes back Japanese, as a model that
cannot translate it might answer). Deterministic, so tests can rely on the exact English.
"""

from __future__ import annotations

import re
from typing import Final

from simulator.chat_validation import ChatRequest

PHRASES: Final[dict[str, str]] = {
    # Japanese
    "夕暮れの灯台": "a lighthouse at dusk",
    "雪の中の赤い狐": "a red fox in the snow",
    "赤い狐": "a red fox",
    "青い狐": "a blue fox",
    "桜の木": "a cherry tree",
    "猫": "a cat",
    "裸婦": "a nude woman",
    "の": " of ",
    "と": " and ",
    # German
    "ein Leuchtturm in der Dämmerung": "a lighthouse at dusk",
    "ein Fuchs im Schnee": "a fox in the snow",
    "ein roter Fuchs": "a red fox",
    "eine Katze": "a cat",
    # Simplified Chinese
    "黄昏时的灯塔": "a lighthouse at dusk",
    "雪中的红狐狸": "a red fox in the snow",
    "一只猫": "a cat",
}
"""Phrases of the test languages (Japanese, German, Simplified Chinese) and their English."""
_ASKS: Final = re.compile(r"translate", re.IGNORECASE)
_INTO_ENGLISH: Final = re.compile(r"into english", re.IGNORECASE)
_PHRASE_RE: Final = re.compile(
    "|".join(re.escape(phrase) for phrase in sorted(PHRASES, key=len, reverse=True))
)


def asks_translation(request: ChatRequest) -> bool:
    """Whether a system message of ``request`` asks for a translation into English."""
    return any(
        message.role == "system"
        and _ASKS.search(message.text or "") is not None
        and _INTO_ENGLISH.search(message.text or "") is not None
        for message in request.messages
    )


def translated(text: str) -> str:
    """``text`` with the phrases of :data:`PHRASES` in English (see the module docstring)."""
    english = _PHRASE_RE.sub(lambda found: f" {PHRASES[found.group(0)]} ", text)
    return " ".join(english.split())
