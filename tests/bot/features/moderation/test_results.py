"""Describe results moderated: a prompt matching a rule is withheld before it is stored, so
neither its text, its number button nor "Imagine all" ever show or run it."""

from __future__ import annotations

from bot.features.moderation import RuleSet
from bot.features.moderation.results import withhold_prompts
from storage import ModerationRule


def test_matching_prompts_are_withheld_and_named_by_category() -> None:
    rules = RuleSet([ModerationRule("gore", "gory"), ModerationRule("nsfw", "nude")])
    result = {"seed": "1", "prompts": ["a fox", "a gory fox", "a NUDE fox", "a skillful fox"]}
    assert withhold_prompts(rules, result) == {
        "seed": "1",
        "prompts": ["a fox", "a skillful fox"],
        "withheld": ["gore", "nsfw"],
    }
    assert withhold_prompts(rules, {"prompts": ["a fox"]}) == {"prompts": ["a fox"]}
