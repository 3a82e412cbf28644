"""What moderation tells a user: a refusal and the ban it earned are one paragraph, written as
the user's language writes two sentences."""

from __future__ import annotations

import pytest

from bot.features.moderation.wording import refusal_text
from bot.kernel import speaking
from storage import Offence

NOW = 1_700_000_000.0


@pytest.mark.parametrize("language", ["ja", "zh-Hans"])
def test_a_refusal_and_its_ban_have_no_space_after_a_full_width_stop(language: str) -> None:
    """qa2 D12: the refusal and the ban it earned are two sentences, joined with none after 。
    in Japanese and Chinese (an ASCII space was)."""
    with speaking(language):
        text = refusal_text("gore", Offence(2, NOW + 3600), NOW)

    assert text.count("。") >= 2 and "。 " not in text


def test_in_english_the_two_sentences_are_joined_by_a_space() -> None:
    text = refusal_text("gore", Offence(1, NOW + 3600), NOW)

    assert "so nothing was run. It is your 1st refused prompt today" in text
