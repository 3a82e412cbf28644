"""Chat answers moderated as they stream: text is let through a whole word at a time, each time
checked with everything before it, and from the first sure match on the rest of the answer is
withheld and a notice naming the category ends it. What was shown before the match did not
match; the withheld text is neither shown nor stored as the answer (history keeps what was
shown). Unsure matches are not withheld (the model check is for prompts only).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
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
