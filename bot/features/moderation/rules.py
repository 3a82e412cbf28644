"""A set of moderation rules compiled for matching, and what a match says.

A word rule (a word or a phrase) is **sure** when it stands as whole words in the folded text
(:mod:`bot.features.moderation.folding`), plural ``s``/``es`` included; it is **unsure** when
it appears only inside longer words or across a gap (``Scunthorpe``, ``nu de``): the model check
decides those, when it is on. A pattern rule is a regular expression searched in the folded
words (sure) and then in the folded text without spaces (unsure).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from bot.features.moderation.folding import Folded, fold, fold_pattern
from bot.kernel import _
from storage import ModerationRule

MAX_PATTERN = 200
"""The longest pattern a rule may be (patterns run on every prompt)."""


@dataclass(frozen=True)
class Match:
    """A rule a text matched: its category (what a refusal names; never the entry) and whether
    the lists are sure (see the module docstring)."""

    category: str
    sure: bool


class BadPattern(ValueError):
    """A pattern rule that is not a regular expression genbot runs."""


def compile_pattern(entry: str) -> re.Pattern[str]:
    """``entry`` as a pattern rule, folded like the text it runs on; :class:`BadPattern` when it
    is too long or not a valid regular expression."""
    if len(entry) > MAX_PATTERN:
        raise BadPattern(_("a pattern is at most {most} characters", most=MAX_PATTERN))
    try:
        return re.compile(fold_pattern(entry))
    except re.error as error:
        raise BadPattern(_("not a regular expression: {error}", error=error)) from None


@dataclass(frozen=True)
class _Word:
    category: str
    whole: re.Pattern[str]
    joined: str


@dataclass(frozen=True)
class _Pattern:
    category: str
    pattern: re.Pattern[str]


class RuleSet:
    """Rules ready to match (word rules folded, patterns compiled); a pattern that does not
    compile is left out (it was refused when it was added; a configured one at start)."""

    def __init__(self, rules: Iterable[ModerationRule]) -> None:
        self._words: list[_Word] = []
        self._patterns: list[_Pattern] = []
        for rule in rules:
            if rule.pattern:
                try:
                    self._patterns.append(_Pattern(rule.category, compile_pattern(rule.entry)))
                except BadPattern:
                    continue
                continue
            folded = fold(rule.entry)
            if not folded.joined:
                continue
            whole = re.compile(rf" {re.escape(folded.words.strip())}(?:e?s)? ")
            self._words.append(_Word(rule.category, whole, folded.joined))

    def __bool__(self) -> bool:
        return bool(self._words or self._patterns)

    def match(self, text: str) -> Match | None:
        """The first sure match in ``text``, else the first unsure one, else None."""
        folded = fold(text)
        return self._sure(folded) or self._unsure(folded)

    def _sure(self, folded: Folded) -> Match | None:
        for word in self._words:
            if word.whole.search(folded.words):
                return Match(word.category, True)
        for rule in self._patterns:
            if rule.pattern.search(folded.words):
                return Match(rule.category, True)
        return None

    def _unsure(self, folded: Folded) -> Match | None:
        for word in self._words:
            if word.joined in folded.joined:
                return Match(word.category, False)
        for rule in self._patterns:
            if rule.pattern.search(folded.joined):
                return Match(rule.category, False)
        return None
