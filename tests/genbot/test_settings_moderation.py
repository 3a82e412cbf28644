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


def test_a_configured_rule_that_would_refuse_nearly_every_prompt_is_named() -> None:
    """qa2 D12: the word ``a`` and the pattern ``.*`` stop genbot at load, as the admin's
    ``/admin moderation add`` refuses them."""
    with pytest.raises(ValidationError) as error:
        Settings.model_validate(
            {"moderation": {"words": {"x": ["ok", "a"]}, "patterns": {"y": [".*", "gor+e"]}}}
        )
    details = {tuple(d["loc"]): d["msg"] for d in error.value.errors()}
    assert details == {
        ("moderation", "words"): (
            "category 'x', word 'a': a word rule has at least 2 letters or digits, since a "
            "shorter one would refuse nearly every prompt"
        ),
        ("moderation", "patterns"): (
            "category 'y', pattern '.*': it can match an empty stretch of text, so it would "
            "refuse nearly every prompt"
        ),
    }
