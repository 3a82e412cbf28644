"""``[moderation]`` as genbot loads it: the core's section, with each configured rule checked as
the core will check it (:func:`bot.features.moderation.rules.rule_problem`: a pattern compiled
as RE2 runs it and not matching an empty text, a word long enough), so that one it would leave
out stops ``genbot run``, ``doctor``, ``demo`` and ``status`` at load, saying why, instead of
being left out with a warning at the first prompt."""

from __future__ import annotations

from pydantic import ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from bot.kernel import ModerationSettings


class CheckedModerationSettings(ModerationSettings):
    """:class:`bot.kernel.ModerationSettings` whose ``words`` and ``patterns`` all pass
    :func:`bot.features.moderation.rules.rule_problem`."""

    @field_validator("words", "patterns")
    @classmethod
    def _usable(cls, lists: dict[str, list[str]], info: ValidationInfo) -> dict[str, list[str]]:
        if not any(lists.values()):
            return lists
        from bot.features.moderation.rules import rule_problem
        from storage import ModerationRule

        pattern = info.field_name == "patterns"
        kind = "pattern" if pattern else "word"
        problems = [
            f"category {category!r}, {kind} '{entry}': {problem}"
            for category, entries in lists.items()
            for entry in entries
            if (problem := rule_problem(ModerationRule(category, entry, pattern))) is not None
        ]
        if problems:
            raise PydanticCustomError(
                "moderation_rule", "{problems}", {"problems": "; ".join(problems)}
            )
        return lists
