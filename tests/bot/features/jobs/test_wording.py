"""The job wording's guard for user text: mentions in a prompt ping nobody."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.features.jobs.wording import ZWSP, clip, neutralize_mentions


def test_neutralize_mentions_breaks_every_mass_and_user_mention() -> None:
    text = "@everyone @here @channel <@123> <@!45> <@&67> <@U0AB> <!channel> <!here> <!everyone>"
    out = neutralize_mentions(text)
    for needle in (
        "@everyone",
        "@here",
        "@channel",
        "<@1",
        "<@!",
        "<@&",
        "<@U",
        "<!c",
        "<!h",
        "<!e",
    ):
        assert needle not in out, needle
    assert out.replace(ZWSP, "") == text


def test_neutralize_mentions_leaves_ordinary_text_alone() -> None:
    text = "mail me at a@b.com about the heresy; <#123> is a channel link"
    assert neutralize_mentions(text) == text


@given(st.text(alphabet="@<>!&here everyonchal123U", max_size=80))
def test_neutralize_mentions_is_idempotent_and_only_inserts_zero_width_spaces(text: str) -> None:
    once = neutralize_mentions(text)
    assert neutralize_mentions(once) == once
    assert once.replace(ZWSP, "") == text.replace(ZWSP, "")
    assert "@everyone" not in once.lower() and "<!here" not in once


def test_a_clipped_prompt_is_one_line_within_its_limit_and_pings_nobody() -> None:
    clipped = clip("a fox\n\nfor @everyone and <@123>" + " tail" * 100, 60)
    assert "\n" not in clipped and len(clipped.replace(ZWSP, "")) == 60 and clipped.endswith("…")
    assert "@everyone" not in clipped and "<@1" not in clipped
