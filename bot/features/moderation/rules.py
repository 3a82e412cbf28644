"""A set of moderation rules compiled for matching, and what a match says.

A word rule (a word or a phrase) is **sure** when it stands as whole words in the folded text
(:mod:`bot.features.moderation.folding`), plural ``s``/``es`` included; it is **unsure** when
it appears only inside longer words or across a gap (``Scunthorpe``, ``nu de``): the model check
decides those, when it is on. A pattern rule is a regular expression searched in the folded
words (sure) and then in the folded text without spaces (unsure).

Patterns run on RE2 (:mod:`re2`), whose matching time grows linearly with the text whatever the
pattern, so that no rule can hold the event loop (``(a+)+$`` took seconds with :mod:`re` on a
25-letter prompt, hours on a 35-letter one). RE2 has no backreferences, lookaround, atomic
groups or possessive quantifiers: such a pattern is refused when it is added, and one stored or
configured before is left out with a warning in the log (:func:`pattern_problem` says why; the
admin page and ``/admin moderation list`` show it as inactive). Its ``\\w``, ``\\d``, ``\\s``
and ``\\b`` are ASCII; ``\\pL`` or ``\\p{Greek}`` name other letters.

A rule that would refuse nearly every prompt is refused the same way (:func:`rule_problem`): a
pattern that can match an empty stretch of text (``.*``, ``x?``, ``\\b``: it matches every
text, or every one with a word), and a word rule
of fewer than :data:`MIN_WORD` characters once folded (``a`` stands as a whole word in most
English prompts) — except one CJK ideograph, which is a word of its own.
"""

from __future__ import annotations

import logging
import re
import unicodedata
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import re2

from bot.features.moderation.folding import Folded, fold, fold_pattern
from bot.kernel import _
from storage import ModerationRule

MAX_PATTERN = 200
"""The longest pattern a rule may be (patterns run on every prompt)."""
MIN_WORD = 2
"""The fewest characters a word rule has once folded (one CJK ideograph aside)."""

log = logging.getLogger(__name__)

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False

Search = Callable[[str], object | None]
"""A compiled pattern rule's search: the first match in a text, or None."""


@dataclass(frozen=True)
class Match:
    """A rule a text matched: its category (what a refusal names; never the entry) and whether
    the lists are sure (see the module docstring)."""

    category: str
    sure: bool


class BadPattern(ValueError):
    """A pattern rule that is not a regular expression genbot runs."""


def compile_pattern(entry: str) -> Search:
    """``entry`` as a pattern rule, folded like the text it runs on and compiled by RE2;
    :class:`BadPattern` when it is too long, not a regular expression, one RE2 does not run,
    or one matching an empty stretch of text (see the module docstring)."""
    if len(entry) > MAX_PATTERN:
        raise BadPattern(_("a pattern is at most {most} characters", most=MAX_PATTERN))
    folded = fold_pattern(entry)
    try:
        compiled = re2.compile(folded, _OPTIONS)
    except re2.error as error:
        reason = _reason(entry) or _reason_of(error)
        if not _python_regex(folded):
            raise BadPattern(_("not a regular expression: {error}", error=reason)) from None
        raise BadPattern(
            _(
                "genbot runs patterns on RE2, which takes time in proportion to the text "
                "whatever the pattern, and so has no backreferences (\\1), lookaround "
                "((?=…), (?!…), (?<=…), (?<!…)), atomic groups, possessive quantifiers or "
                "repetitions above {{1000}} (RE2 says: {error})",
                error=reason,
            )
        ) from None
    if any(_empty(compiled.search(sample)) for sample in _SAMPLES):
        if compiled.search(_WORDED):
            raise BadPattern(
                _("it can match an empty stretch of text, so it would refuse nearly every prompt")
            )
        raise BadPattern(
            _(
                "it matches an empty or blank text, which no prompt is: keep only the part "
                "that matches words"
            )
        )
    search: Search = compiled.search
    return search


_WORDED = " q "
_SAMPLES = ("", " ", _WORDED)
"""Texts on which a pattern that can match nothing finds its empty match: on a text with a word
(``.*``, ``x?``, ``\\b``), it refuses nearly every prompt; on blank text only (``^$``,
``^\\s*$``), it is there for nothing."""


def _empty(found: re2._Match | None) -> bool:
    return found is not None and found.start() == found.end()


def _reason(entry: str) -> str | None:
    """RE2's reason for refusing ``entry`` as written (it quotes the part it stopped at, which
    the admin would not recognise folded), or None when only its folded form is refused."""
    try:
        re2.compile(entry, _OPTIONS)
    except re2.error as error:
        return _reason_of(error)
    return None


def _reason_of(error: re2.error) -> str:
    return error.args[0].decode() if isinstance(error.args[0], bytes) else str(error)


def _python_regex(pattern: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            re.compile(pattern)
        except re.error:
            return False
    return True


def pattern_problem(entry: str) -> str | None:
    """Why the pattern rule ``entry`` is inactive (:func:`compile_pattern` refuses it), or None
    when it runs."""
    try:
        compile_pattern(entry)
    except BadPattern as error:
        return str(error)
    return None


def word_problem(entry: str) -> str | None:
    """Why the word rule ``entry`` would never match or would refuse nearly every prompt (see
    the module docstring), or None when it is a word genbot looks for."""
    joined = fold(entry).joined
    if not joined:
        return _("it has no letters or digits left to match once folded")
    if len(joined) < MIN_WORD and not unicodedata.name(joined, "").startswith("CJK "):
        return _(
            "a word rule has at least {least} letters or digits, since a shorter one would "
            "refuse nearly every prompt",
            least=MIN_WORD,
        )
    return None


def rule_problem(rule: ModerationRule) -> str | None:
    """Why ``rule`` is inactive (:func:`pattern_problem`, :func:`word_problem`), or None."""
    return pattern_problem(rule.entry) if rule.pattern else word_problem(rule.entry)


@dataclass(frozen=True)
class _Word:
    category: str
    whole: re.Pattern[str]
    joined: str


@dataclass(frozen=True)
class _Pattern:
    category: str
    search: Search


class RuleSet:
    """Rules ready to match (word rules folded, patterns compiled); a rule with a problem
    (:func:`rule_problem`) is left out with a warning in the log (one added by an admin was
    refused then; one stored before genbot checked it may have one)."""

    def __init__(self, rules: Iterable[ModerationRule]) -> None:
        self._words: list[_Word] = []
        self._patterns: list[_Pattern] = []
        for rule in rules:
            if rule.pattern:
                try:
                    self._patterns.append(_Pattern(rule.category, compile_pattern(rule.entry)))
                except BadPattern as error:
                    log.warning(
                        "moderation pattern %r (%s) left out: %s", rule.entry, rule.category, error
                    )
                    continue
                continue
            problem = word_problem(rule.entry)
            if problem is not None:
                log.warning(
                    "moderation word %r (%s) left out: %s", rule.entry, rule.category, problem
                )
                continue
            folded = fold(rule.entry)
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
            if rule.search(folded.words):
                return Match(rule.category, True)
        return None

    def _unsure(self, folded: Folded) -> Match | None:
        for word in self._words:
            if word.joined in folded.joined:
                return Match(word.category, False)
        for rule in self._patterns:
            if rule.search(folded.joined):
                return Match(rule.category, False)
        return None
