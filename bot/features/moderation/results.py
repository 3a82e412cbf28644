"""Describe results moderated: a prompt the provider wrote that matches a rule surely is taken
out of the stored result before anything shows it, and its category is kept so that the
message says what was withheld (its number button, "Imagine all" and the Remix form then never
see it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.features.moderation.rules import RuleSet


def withhold_prompts(rules: RuleSet, result: Mapping[str, Any]) -> dict[str, Any]:
    """``result`` (a finished describe job's) with its matching prompts withheld: ``prompts``
    keeps the others, ``withheld`` names each withheld one's category."""
    kept: list[str] = []
    withheld: list[str] = []
    for prompt in result.get("prompts") or ():
        match = rules.match(str(prompt))
        if match is not None and match.sure:
            withheld.append(match.category)
        else:
            kept.append(str(prompt))
    return {**result, "prompts": kept, "withheld": withheld} if withheld else dict(result)
