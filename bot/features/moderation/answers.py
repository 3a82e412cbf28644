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

from collections.abc import AsyncIterator, Sequence
from typing import TypeVar

from bot.features.moderation.rules import RuleSet

End = TypeVar("End")


def withheld_notice(category: str) -> str:
    """What replaces the withheld rest of an answer."""
    return f"\n\n_genbot withheld the rest of this answer: it matched the rules on **{category}**._"


async def withheld_from_match(
    rules: RuleSet, deltas: AsyncIterator[str | End]
) -> AsyncIterator[str | End]:
    """``deltas`` (text pieces, and an end marker passed through) with the answer withheld from
    its first sure match on (see the module docstring)."""
    shown = ""
    held = ""
    async for item in deltas:
        if not isinstance(item, str):
            if held:
                if (match := rules.match(shown + held)) is not None and match.sure:
                    yield withheld_notice(match.category)
                    return
                yield held
                held = ""
            yield item
            continue
        held += item
        cut = max(held.rfind(" "), held.rfind("\n")) + 1
        if not cut:
            continue
        match = rules.match(shown + held[:cut])
        if match is not None and match.sure:
            yield withheld_notice(match.category)
            return
        yield held[:cut]
        shown, held = shown + held[:cut], held[cut:]
    if held:
        match = rules.match(shown + held)
        yield withheld_notice(match.category) if match is not None and match.sure else held


def withheld_answers_notice(categories: Sequence[str]) -> str:
    """What says that other answers (one per category in ``categories``) were withheld."""
    count = len(categories)
    named = ", ".join(f"**{category}**" for category in dict.fromkeys(categories))
    answers, pronoun = ("answer", "it") if count == 1 else ("answers", "they")
    return f"_genbot withheld {count} other {answers}: {pronoun} matched the rules on {named}._"


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
