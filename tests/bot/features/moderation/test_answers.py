"""A streamed answer withheld from its first sure match on, a word split across pieces
included; an answer matching nothing passes unchanged."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from bot.features.moderation import RuleSet
from bot.features.moderation.answers import withheld_from_match, withheld_notice
from storage import ModerationRule

RULES = RuleSet([ModerationRule("nsfw", "nude"), ModerationRule("spam", "buy now")])
END = object()


async def pieces(items: Sequence[object]) -> AsyncIterator[object]:
    for item in items:
        yield item


async def shown(items: Sequence[object]) -> list[object]:
    return [item async for item in withheld_from_match(RULES, pieces(items))]


async def test_an_answer_matching_nothing_passes_unchanged() -> None:
    items = ["A fox ", "in the sn", "ow, then", " a boat.", END]
    out = await shown(items)
    assert "".join(str(i) for i in out if i is not END) == "A fox in the snow, then a boat."
    assert out[-1] is END


async def test_the_answer_is_withheld_from_a_word_split_across_pieces() -> None:
    out = await shown(["Here is a n", "u", "de portrait and more", " text", END])
    assert out == ["Here is a ", withheld_notice("nsfw")]


async def test_a_phrase_and_a_match_in_the_last_piece_are_withheld() -> None:
    assert await shown(["Please buy ", "now"]) == ["Please buy ", withheld_notice("spam")]
    assert await shown(["ok ", "NUDE", END]) == ["ok ", withheld_notice("nsfw")]
