"""Chat answers moderated as they stream: text is let through a whole word at a time, each time
checked with everything before it, and from the first sure match on the rest of the answer is
withheld and a notice naming the category ends it. What was shown before the match did not
match; the withheld text is neither shown nor stored as the answer (history keeps what was
shown). Unsure matches are not withheld (the model check is for prompts only).

The other answers of a message (``n`` > 1, offered under the reply with ``Use N`` buttons) are
checked whole, with the same rules: one with a sure match is withheld entirely — never shown,
offered or stored — and a notice naming its category says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bot.api import StreamEnd, TextDeltas
from bot.features.moderation.rules import RuleSet
from bot.kernel import _, ngettext


def withheld_notice(category: str) -> str:
    """What replaces the withheld rest of an answer."""
    return "\n\n" + _(
        "_genbot withheld the rest of this answer: it matched the rules on **{category}**._",
        category=category,
    )


class WithheldFromMatch:
    """``deltas`` with the answer withheld from its first sure match on (see the module
    docstring), read like them."""

    def __init__(self, rules: RuleSet, deltas: TextDeltas) -> None:
        self._rules = rules
        self._deltas = deltas
        self._shown = ""
        self._held = ""
        self._withheld = False
        self._notice = ""
        self._over = asyncio.Event()
        self._over.set()

    @property
    def ended(self) -> asyncio.Event:
        """The answer's ``ended``; set once the rest is withheld."""
        return self._over if self._withheld else self._deltas.ended

    async def wait(self) -> None:
        """Until more of the answer arrived (or the rest is withheld)."""
        if not self._withheld:
            await self._deltas.wait()

    def read_nowait(self) -> list[str | StreamEnd]:
        """What may be shown of what arrived, without waiting: word by word, each checked with
        everything before it (a word once it ends, or the answer ends)."""
        if self._withheld:
            return []
        ended = self._deltas.ended.is_set()
        arrived = self._deltas.read_nowait()
        if not arrived and ended:
            return self._rest()
        return self._screen(arrived)

    def _screen(self, arrived: list[str | StreamEnd]) -> list[str | StreamEnd]:
        """What may be shown of ``arrived``: the words let through (one piece), then the
        notice once a word makes a sure match, or the end passed on."""
        passed = ""
        for item in arrived:
            if isinstance(item, StreamEnd):
                passed += self._let_through(len(self._held))
                if not self._withheld:
                    return [passed, item] if passed else [item]
            else:
                self._held += item
                while not self._withheld and (cut := _word_end(self._held)):
                    passed += self._let_through(cut)
            if self._withheld:
                break
        return self._shown_with(passed)

    def _rest(self) -> list[str | StreamEnd]:
        """The answer is over: what is held, checked."""
        return self._shown_with(self._let_through(len(self._held)))

    def _shown_with(self, passed: str) -> list[str | StreamEnd]:
        """``passed``, then the notice once the rest is withheld."""
        pieces: list[str | StreamEnd] = [passed] if passed else []
        return [*pieces, self._notice] if self._withheld else pieces

    def _let_through(self, cut: int) -> str:
        """The first ``cut`` characters held, checked with everything shown before them: ""
        when they make a sure match (the rest is withheld from there)."""
        piece, self._held = self._held[:cut], self._held[cut:]
        if not piece or self._withheld:
            return ""
        match = self._rules.match(self._shown + piece)
        if match is not None and match.sure:
            self._withheld = True
            self._notice = withheld_notice(match.category)
            return ""
        self._shown += piece
        return piece


def _word_end(text: str) -> int:
    """Where the first word of ``text`` ends (after its space or line break; 0: not yet)."""
    ends = [index for index in (text.find(" "), text.find("\n")) if index >= 0]
    return min(ends) + 1 if ends else 0


def withheld_answers_notice(categories: Sequence[str]) -> str:
    """What says that other answers (one per category in ``categories``) were withheld."""
    count = len(categories)
    named = ", ".join(f"**{category}**" for category in dict.fromkeys(categories))
    return ngettext(
        "_genbot withheld {n} other answer: it matched the rules on {categories}._",
        "_genbot withheld {n} other answers: they matched the rules on {categories}._",
        count,
        categories=named,
    )


def withheld_answers(rules: RuleSet, texts: Sequence[str]) -> tuple[tuple[str, ...], str]:
    """The ``texts`` (a message's other answers) no sure match withholds, in order, and the
    notice for those withheld ("" when none was)."""
    kept: list[str] = []
    withheld: list[str] = []
    for text in texts:
        match = rules.match(text)
        if match is not None and match.sure:
            withheld.append(match.category)
        else:
            kept.append(text)
    return tuple(kept), withheld_answers_notice(withheld) if withheld else ""
