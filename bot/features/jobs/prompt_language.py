"""Whether a prompt's natural language is other than English, decided on the spot: no network,
no model, no dictionary beyond a few dozen words.

Two signals, each tuned to be wrong rarely rather than to catch everything (an English prompt
sent to a translator costs the user tokens and may come back changed):

1. **Letters of another script.** At least :data:`MIN_OTHER_LETTERS` letters that are not Latin
   (kana, Han, Hangul, Cyrillic, Greek, Arabic…) making at least :data:`MIN_OTHER_SHARE` of the
   letters: ``夕暮れの灯台`` and ``サイバーパンクな東京, neon lights`` are translated,
   ``a portrait in the style of 葛飾北斎`` is not (the name is kept as written, as a model would).
   Han characters carry a word each, so they are compared with Latin letters as they come —
   which already leans towards translating mixed prompts whose meaning is in the other script.
2. **Latin-script languages by their small words.** German, French, Spanish, Italian and
   Portuguese articles, prepositions and conjunctions that are not English words too (``der``,
   ``und``, ``dans``, ``avec``, ``los``, ``della``, ``não``…): a prompt is taken for one of them
   when at least :data:`MIN_FUNCTION_WORDS` different ones of that language appear, they are at
   least :data:`MIN_FUNCTION_SHARE` of its words, and more of them than English small words.
   ``ein Fuchs im Schnee`` is German; ``a café in Paris``, ``Santa Maria del Fiore at dawn``
   and ``la dolce vita, film still`` stay English.

Prompts in other Latin-script languages (Dutch, Polish, Turkish, Vietnamese…) are not detected:
they are sent as written, as before.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

MIN_OTHER_LETTERS: Final = 1
MIN_OTHER_SHARE: Final = 0.3
MIN_FUNCTION_WORDS: Final = 2
MIN_FUNCTION_SHARE: Final = 0.2

_WORD_RE: Final = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def _small_words(words: str) -> frozenset[str]:
    return frozenset(words.split())


_ENGLISH: Final = _small_words(
    "a an the of and or in on at to with from by for into onto over under is are was be "
    "this that these those his her its their my your our as while without"
)
FUNCTION_WORDS: Final[dict[str, frozenset[str]]] = {
    "de": _small_words(
        "der das und ein eine einen einem einer im mit auf bei unter vor ist nicht dem des "
        "zum zur ohne sehr aus für über zwischen neben hinter vom beim ins"
    ),
    "fr": _small_words(
        "le les un une des du dans sur avec et est au aux pour sous sans entre chez très la"
    ),
    "es": _small_words(
        "el los las un una unos unas con por para del y sobre entre sin muy bajo hacia la"
    ),
    "it": _small_words(
        "il lo gli un una della dello delle dei degli nel nella nelle sul sulla con per tra "
        "fra senza molto sotto la"
    ),
    "pt": _small_words(
        "os uma umas uns com da dos das na nas num numa em sobre entre sem muito não ao aos"
    ),
}
"""Per language, small words that are not English words (``la`` stays in several lists, but
one of them alone never makes a language: it needs :data:`MIN_FUNCTION_WORDS` different ones)."""


def _is_latin(char: str) -> bool:
    return unicodedata.name(char, "").startswith("LATIN")


def other_script_share(text: str) -> tuple[int, float]:
    """How many of ``text``'s letters are not Latin, and their share of its letters."""
    letters = [char for char in text if char.isalpha()]
    if not letters:
        return 0, 0.0
    other = sum(1 for char in letters if not _is_latin(char))
    return other, other / len(letters)


def latin_language(text: str) -> str | None:
    """The language of :data:`FUNCTION_WORDS` that ``text`` is written in, by its small words
    (see the module docstring), or None."""
    words = [word.lower() for word in _WORD_RE.findall(text)]
    if not words:
        return None
    english = sum(1 for word in words if word in _ENGLISH)
    best: tuple[int, str] | None = None
    for language, small in FUNCTION_WORDS.items():
        hits = [word for word in words if word in small]
        if len(set(hits)) < MIN_FUNCTION_WORDS or len(hits) <= english:
            continue
        if len(hits) / len(words) < MIN_FUNCTION_SHARE:
            continue
        if best is None or len(hits) > best[0]:
            best = (len(hits), language)
    return best[1] if best else None


def is_english(text: str) -> bool:
    """Whether ``text`` (a prompt's natural language alone) reads as English, or as nothing
    genbot can tell from English (see the module docstring)."""
    other, share = other_script_share(text)
    if other >= MIN_OTHER_LETTERS and share >= MIN_OTHER_SHARE:
        return False
    return latin_language(text) is None
