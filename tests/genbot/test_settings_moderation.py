"""``[moderation] patterns`` are compiled as the core runs them when genbot's settings load."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from genbot.settings import Settings
from genbot.settings_moderation import CheckedModerationSettings


def test_patterns_the_core_runs_load() -> None:
    settings = Settings.model_validate(
        {"moderation": {"patterns": {"gore": [r"decapitat\w*", r"gor+e"], "empty": []}}}
    )
    assert isinstance(settings.moderation, CheckedModerationSettings)
    assert settings.moderation.patterns["gore"] == [r"decapitat\w*", r"gor+e"]


def test_each_pattern_the_core_would_leave_out_is_named_with_its_category() -> None:
    too_long = "a" * 201
    with pytest.raises(ValidationError) as error:
        Settings.model_validate(
            {"moderation": {"patterns": {"x": ["ok", "Bad(Word"], "y": [too_long, r"(x)\1"]}}}
        )
    [details] = error.value.errors()
    assert details["loc"] == ("moderation", "patterns")
    problems = details["msg"].split("; ")
    assert problems[0] == (
        "category 'x', pattern 'Bad(Word': not a regular expression: missing ): Bad(Word"
    )
    assert problems[1] == f"category 'y', pattern '{too_long}': a pattern is at most 200 characters"
    assert problems[2].startswith(r"category 'y', pattern '(x)\1': genbot runs patterns on RE2")
    assert len(problems) == 3


def test_a_category_without_a_name_is_still_refused() -> None:
    with pytest.raises(ValidationError, match="a moderation category needs a name"):
        CheckedModerationSettings.model_validate({"patterns": {" ": ["fine"]}})
