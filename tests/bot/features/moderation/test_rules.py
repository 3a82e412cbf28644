"""Rules: sure and unsure matches of words, phrases and patterns; a refusal's category."""

from __future__ import annotations

import logging

import pytest

from bot.features.moderation import BadPattern, Match, RuleSet
from bot.features.moderation.rules import (
    MAX_PATTERN,
    compile_pattern,
    pattern_problem,
    rule_problem,
    word_problem,
)
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
    assert RuleSet([ModerationRule("x", "yz")])


@pytest.mark.parametrize("pattern", [".*", "x?", "(nude)?", "a*|b", r"\b", "", "(?P<n>x)?", "^"])
def test_a_pattern_matching_an_empty_stretch_of_text_is_refused(pattern: str) -> None:
    """qa2 D12: such a pattern matches every prompt (or every one with a word)."""
    with pytest.raises(
        BadPattern, match="can match an empty stretch of text, so it would refuse nearly every"
    ):
        compile_pattern(pattern)


@pytest.mark.parametrize("pattern", ["^$", r"^\s*$", r"\A\z", "^$|nude"])
def test_a_pattern_matching_empty_text_but_no_word_is_refused_saying_so(pattern: str) -> None:
    """It was refused as one that "would refuse nearly every prompt", which it never does."""
    with pytest.raises(BadPattern, match="matches an empty or blank text, which no prompt is"):
        compile_pattern(pattern)


def test_a_named_group_runs() -> None:
    """qa2 D12: a named group was folded to ``(?p<…>``, which RE2 refuses."""
    assert pattern_problem(r"(?P<word>Nude)s?") is None
    assert RuleSet([ModerationRule("nsfw", r"(?P<word>Nude)s?", pattern=True)]).match(
        "two NUDES"
    ) == Match("nsfw", True)


@pytest.mark.parametrize(("word", "problem"), [("a", "at least 2"), ("Ä", "at least 2"),
    ("1", "at least 2"), (" - ", "no letters or digits"), ("ok", None), ("死", None),
    ("l", "at least 2")])  # fmt: skip
def test_a_word_rule_is_long_enough_to_be_a_word(word: str, problem: str | None) -> None:
    """qa2 D12: ``a`` stands as a whole word in nearly every English prompt; one ideograph
    is a word of its own."""
    said = word_problem(word)
    assert (said is None) if problem is None else (said is not None and problem in said)


def test_a_rule_that_would_refuse_nearly_everything_is_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One stored before genbot checked it: left out with a warning, and its problem shown."""
    rules = [ModerationRule("x", "a"), ModerationRule("y", ".*", pattern=True)]
    with caplog.at_level(logging.WARNING):
        assert not RuleSet(rules)
    assert [rule_problem(rule) is not None for rule in rules] == [True, True]
    assert "moderation word 'a' (x) left out" in caplog.text
    assert "moderation pattern '.*' (y) left out" in caplog.text


def test_a_pattern_that_cannot_run_is_refused() -> None:
    with pytest.raises(BadPattern, match="not a regular expression"):
        compile_pattern("(unclosed")
    with pytest.raises(BadPattern, match=f"at most {MAX_PATTERN}"):
        compile_pattern("a" * (MAX_PATTERN + 1))


def test_a_refusal_quotes_the_pattern_as_written_not_folded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert pattern_problem("(unclosed") == "not a regular expression: missing ): (unclosed"
    assert str(pattern_problem("Nude(?=S)")).endswith("(RE2 says: invalid perl operator: (?=)")
    with caplog.at_level(logging.WARNING, "bot.features.moderation.rules"):
        RuleSet([ModerationRule("x", "Bad(Word1", pattern=True)])
    [warning] = caplog.records
    assert warning.getMessage() == (
        "moderation pattern 'Bad(Word1' (x) left out: not a regular expression: "
        "missing ): Bad(Word1"
    )


ADVERSARIAL = "a" * 10_000 + "b"
"""Against ``(a+)+$``, backtracking tries every way to split the run of ``a``: :mod:`re` took
0.3 s for 22 of them, about four times as long for each two more — years for 40, never ending
for these."""


@pytest.mark.timeout(60)
def test_a_pattern_that_backtracks_exponentially_finishes_on_a_long_text() -> None:
    rules = RuleSet([ModerationRule("test", "(a+)+$", pattern=True)])
    assert rules.match(ADVERSARIAL) is None
    assert rules.match(f"x {ADVERSARIAL} " * 3) is None
    assert rules.match("a" * 10_000) == Match("test", False), "the words end in a space"
    assert rules.match("baaa") == Match("test", False)


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        (r"(ab)\1", r"invalid escape sequence: \1"),
        (r"nude(?=s)", "invalid perl operator: (?="),
        (r"(?<!a)b", "invalid perl operator: (?<!"),
        (r"a*+", "bad repetition operator: *+"),
        (r"(?>a)", "invalid perl operator: (?>"),
        (r"a{2000}", "invalid repetition size: {2000}"),
    ],
)
def test_a_pattern_rule_needing_backtracking_is_refused_saying_why(pattern: str, said: str) -> None:
    with pytest.raises(BadPattern) as refused:
        compile_pattern(pattern)
    why = str(refused.value)
    assert "RE2" in why and "backreferences" in why and "lookaround" in why
    assert why.endswith(f"(RE2 says: {said})")
    assert pattern_problem(pattern) == why


def test_a_stored_pattern_that_cannot_run_is_left_out_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "bot.features.moderation.rules"):
        rules = RuleSet(
            [
                ModerationRule("old", r"(x)\1", pattern=True),
                ModerationRule("gore", r"gor+e", pattern=True),
            ]
        )
    assert rules.match("xx gorre") == Match("gore", True)
    assert rules.match("xx") is None
    [warning] = caplog.records
    assert warning.getMessage().startswith("moderation pattern '(x)\\\\1' (old) left out: ")
    assert "backreferences" in warning.getMessage()
    assert pattern_problem(r"gor+e") is None


def test_a_patterns_escapes_keep_their_case() -> None:
    rules = RuleSet(
        [
            ModerationRule("stuck", r"glued\S", pattern=True),
            ModerationRule("greek", r"\p{Greek}{3}", pattern=True),
        ]
    )
    assert rules.match("gluedx") == Match("stuck", True)
    assert rules.match("glued fox") == Match("stuck", False), "only without the spaces"
    assert rules.match("ψξζ") == Match("greek", True)
    assert rules.match("logos") is None


def test_a_pattern_with_an_accented_letter_matches_the_text_it_names() -> None:
    rules = RuleSet([ModerationRule("nsfw", r"mädchen\W+nackt", pattern=True)])
    assert rules.match("Zwei Mädchen, nackt") == Match("nsfw", sure=True)
    assert rules.match("zwei madchen nackt") == Match("nsfw", sure=True)
    assert rules.match("zwei mädchennackt") is None, r"\W still needs a separator"
