"""Rules: sure and unsure matches of words, phrases and patterns; a refusal's category."""

from __future__ import annotations

import pytest

from bot.features.moderation import BadPattern, Match, RuleSet
from bot.features.moderation.rules import MAX_PATTERN, compile_pattern
from storage import ModerationRule

RULES = RuleSet(
    [
        ModerationRule("nsfw", "nude"),
        ModerationRule("violence", "kill"),
        ModerationRule("spam", "buy now"),
        ModerationRule("gore", r"decapitat\w*", pattern=True),
        ModerationRule("broken", "(unclosed", pattern=True),
    ]
)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("a nude portrait", Match("nsfw", True)),
        ("N.U.D.E beach", Match("nsfw", True)),
        ("ｎｕｄｅ", Match("nsfw", True)),
        ("nudes", Match("nsfw", True)),
        ("k1ll them", Match("violence", True)),
        ("KILL", Match("violence", True)),
        ("BUY  NOW!", Match("spam", True)),
        ("buy-now", Match("spam", True)),
        ("decapitated statue", Match("gore", True)),
        ("Scunthorpe denuded", Match("nsfw", False)),
        ("skillful", Match("violence", False)),
        ("nu de", Match("nsfw", False)),
        ("a fox in the snow", None),
        ("buy a boat now", None),
    ],
)
def test_a_text_matches_surely_unsurely_or_not(text: str, match: Match | None) -> None:
    assert RULES.match(text) == match


def test_a_sure_match_wins_over_an_earlier_unsure_one() -> None:
    rules = RuleSet([ModerationRule("a", "cat"), ModerationRule("b", "dog")])
    assert rules.match("concatenate a dog") == Match("b", True)


def test_an_empty_rule_set_is_false_and_matches_nothing() -> None:
    assert not RuleSet([])
    assert not RuleSet([ModerationRule("x", " . ")])
    assert RuleSet([ModerationRule("x", "y")])


def test_a_pattern_that_cannot_run_is_refused() -> None:
    with pytest.raises(BadPattern, match="not a regular expression"):
        compile_pattern("(unclosed")
    with pytest.raises(BadPattern, match=f"at most {MAX_PATTERN}"):
        compile_pattern("a" * (MAX_PATTERN + 1))
