"""Text folded for matching: what moderation compares instead of what a user typed.

:func:`fold` applies, in order: NFKC (full-width ``ｎｕｄｅ``, ligatures, circled and
mathematical letters become plain ones), case folding (``ß`` → ``ss``), accents dropped (NFD
without its combining marks: ``nüde`` → ``nude``), invisible format characters dropped
(zero-width spaces and joiners), then :data:`LOOK_ALIKES` (Cyrillic and Greek letters that look
Latin, digits and symbols standing for letters) — both in the text and in the rules, so that
``l``, ``1`` and ``|`` all read ``i`` on both sides. Words are then split on whitespace; a word
of single characters joined by separators (``n.u.d.e``, ``n-u-d-e``) is one word, any other word
splits at its separators (``self-harm`` → ``self harm``), and three or more single characters
in a row (``n u d e``) join into one word.

Not caught, by design or for lack of a table: letters of other scripts that only resemble Latin
loosely (the table holds the common Cyrillic and Greek look-alikes, not Unicode's whole
confusables list), words split into longer pieces (``nu de``: only the model check, if on,
sees those), words spelled phonetically or misspelled (``nood``), words in other languages,
text in images, and meaning without listed words.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final

LOOK_ALIKES: Final[dict[str, str]] = {
    # Cyrillic letters that look Latin
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d",
    "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "i", "ո": "n", "ս": "u",
    # Greek letters that look Latin
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "μ": "u", "ν": "v", "ο": "o",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ω": "w", "ς": "s",
    # digits and symbols that stand for letters ("leet"), and letters that stand for each other
    "0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "9": "g",
    "@": "a", "$": "s", "|": "i", "€": "e", "l": "i",
}  # fmt: skip
"""One letter for each look-alike, applied to rules and text alike (a skeleton, as Unicode's
TR39 makes one, from a small table kept here; see the module docstring for what it leaves out)."""

_TABLE: Final = str.maketrans(LOOK_ALIKES)
_FORMAT: Final = re.compile(r"[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
_SEPARATORS: Final = re.compile(r"[^\w]+|_+")
MIN_SPELLED = 3
"""Single characters in a row (``n u d e``) join into one word from this many on."""


@dataclass(frozen=True)
class Folded:
    """A text as moderation reads it: ``words`` (folded words, one space between, with a space
    at each end so that a whole word is `` word ``) and ``joined`` (the same without spaces)."""

    words: str
    joined: str


def fold_letters(text: str) -> str:
    """``text`` with the module docstring's character steps applied (no word splitting)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    bare = "".join(c for c in unicodedata.normalize("NFD", folded) if not unicodedata.combining(c))
    return _FORMAT.sub("", unicodedata.normalize("NFC", bare)).translate(_TABLE)


_LETTERS_ONLY: Final = str.maketrans({k: v for k, v in LOOK_ALIKES.items() if k.isalpha()})


_SYNTAX: Final = re.compile(
    r"\\(?:[pP](?:\{[^}]*\}|.)|.)"  # an escape: \W, \p{Greek}, \pL
    r"|\(\?P?<[A-Za-z_]\w*>|\(\?P=\w*\)"  # a named group, a reference to one
    r"|\(\?[A-Za-z-]*[:)]"  # flags: (?i), (?U:…), (?-s:…)
    r"|\[:\^?[A-Za-z]*:\]",  # a class of a bracket expression: [[:alpha:]]
    re.DOTALL,
)
"""The pieces of a pattern that are its own syntax, kept as written when it is folded."""


def fold_pattern(pattern: str) -> str:
    """A pattern rule folded to match folded text: NFKC, then its letters case folded, without
    accents (``ä`` → ``a``, as the text's) and with their look-alikes replaced, except in its
    own syntax (:data:`_SYNTAX`: its escapes, ``\\W`` is not ``\\w`` and ``\\p{Greek}`` names a
    script; its group names and flags, ``(?P<name>…)``, ``(?U)``; its classes, ``[[:alpha:]]``).
    Digits and symbols stay: they are the expression's syntax too."""
    normal = unicodedata.normalize("NFKC", pattern)
    pieces: list[str] = []
    start = 0
    for escape in _SYNTAX.finditer(normal):
        pieces += [_fold_literal(normal[start : escape.start()]), escape[0]]
        start = escape.end()
    return "".join([*pieces, _fold_literal(normal[start:])])


def _fold_literal(piece: str) -> str:
    """A stretch of a pattern between its escapes, folded as :func:`fold_letters` folds text:
    its letters' accents dropped (a combining mark on no letter, as in ``[\u0300-\u036f]``,
    is the expression's own), its symbols and digits kept."""
    kept: list[str] = []
    for c in unicodedata.normalize("NFD", piece.casefold()):
        if not (unicodedata.combining(c) and kept and kept[-1].isalpha()):
            kept.append(c)
    return unicodedata.normalize("NFC", "".join(kept)).translate(_LETTERS_ONLY)


def _words(token: str) -> list[str]:
    pieces = [piece for piece in _SEPARATORS.split(token) if piece]
    if len(pieces) > 1 and all(len(piece) == 1 for piece in pieces):
        return ["".join(pieces)]
    return pieces


def fold(text: str) -> Folded:
    """``text`` folded for matching (see the module docstring)."""
    words = [word for token in fold_letters(text).split() for word in _words(token)]
    merged: list[str] = []
    run: list[str] = []
    for word in [*words, ""]:
        if len(word) == 1:
            run.append(word)
            continue
        merged.extend(["".join(run)] if len(run) >= MIN_SPELLED else run)
        run = []
        if word:
            merged.append(word)
    return Folded(f" {' '.join(merged)} ", "".join(merged))
