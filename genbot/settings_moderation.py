"""``[moderation]`` as genbot loads it: the core's section, with each configured pattern compiled
as the core will run it (:func:`bot.features.moderation.rules.pattern_problem`), so that one it
cannot run stops ``genbot run``, ``doctor``, ``demo`` and ``status`` at load, saying why, instead
of being left out with a warning at the first prompt."""

from __future__ import annotations

from pydantic import field_validator
from pydantic_core import PydanticCustomError

from bot.kernel import ModerationSettings


class CheckedModerationSettings(ModerationSettings):
    """:class:`bot.kernel.ModerationSettings` whose ``patterns`` all run on RE2."""

    @field_validator("patterns")
    @classmethod
    def _runnable(cls, patterns: dict[str, list[str]]) -> dict[str, list[str]]:
        if not any(patterns.values()):
            return patterns
        from bot.features.moderation.rules import pattern_problem

        problems = [
            f"category {category!r}, pattern '{entry}': {problem}"
            for category, entries in patterns.items()
            for entry in entries
            if (problem := pattern_problem(entry)) is not None
        ]
        if problems:
            raise PydanticCustomError(
                "moderation_pattern", "{problems}", {"problems": "; ".join(problems)}
            )
        return patterns
