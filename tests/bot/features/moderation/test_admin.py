"""``/admin moderation``: the action read from its option or the text's first word, and the
rules it refuses to add."""

from __future__ import annotations

import pytest

from bot.features.moderation.admin import action_and_entry, banned_user, new_rule
from bot.kernel import OptionValue, UserError
from storage import ModerationRule


@pytest.mark.parametrize(
    ("options", "read"),
    [
        ({"action": "add", "entry": "nude"}, ("add", "nude")),
        ({"entry": "add nude photo"}, ("add", "nude photo")),
        ({"entry": 'REMOVE "nude photo"'}, ("remove", "nude photo")),
        ({"entry": "list"}, ("list", "")),
        ({}, ("list", "")),
    ],
)
def test_the_action_and_entry(options: dict[str, str], read: tuple[str, str]) -> None:
    assert action_and_entry(options) == read


@pytest.mark.parametrize("action", ["frob", "Bans", "listing"])
def test_an_action_that_is_none_is_refused_naming_the_actions(action: str) -> None:
    """qa2 D12: the admin page's ``{"action": "frob"}`` listed the rules."""
    with pytest.raises(UserError, match=r"has no action .*: use add, remove, list, ban or unban"):
        action_and_entry({"action": action, "entry": "x"})


def test_an_entry_without_an_action_is_refused_with_an_example() -> None:
    with pytest.raises(UserError, match=r"add, remove, list, ban or unban: .*add nude --category"):
        action_and_entry({"entry": "nude"})


def test_a_new_rule_and_what_is_refused() -> None:
    assert new_rule({"category": "nsfw"}, "nude") == ModerationRule("nsfw", "nude")
    assert new_rule({}, "nude") == ModerationRule("blocked", "nude")
    assert new_rule({"pattern": True}, r"gor+e") == ModerationRule("blocked", r"gor+e", True)
    refused: list[tuple[dict[str, OptionValue], str, str]] = [
        ({}, "", "Say what to add"),
        ({}, "...", "no letters or digits"),
        ({}, "a", "cannot be used: a word rule has at least 2 letters or digits, since"),
        ({"pattern": True}, ".*", "cannot be used: it can match an empty stretch of text"),
        ({"pattern": True}, "(x", "cannot be used"),
        ({"pattern": True}, r"(x)\1", r"cannot be used: genbot runs patterns on RE2.*no backref"),
        ({"pattern": True}, r"x(?!y)", r"cannot be used: .*lookaround.*RE2 says: .*\(\?!"),
        ({"category": "c" * 41}, "x", "at most"),
    ]
    for options, entry, said in refused:
        with pytest.raises(UserError, match=said):
            new_rule(options, entry)


def test_the_user_to_unban_is_a_mention_or_an_id() -> None:
    for entry in ("<@123>", "<@!123>", "123", " <@123|alice> "):
        assert banned_user(entry) == "123"
    assert banned_user("<@U1|alice>") == "U1"
    with pytest.raises(UserError, match="Say whom to unban"):
        banned_user("two words")
