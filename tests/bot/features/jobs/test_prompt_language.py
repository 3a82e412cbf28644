"""Telling a prompt that is not English, on the spot: few false positives first."""

from __future__ import annotations

import pytest

from bot.features.jobs.prompt_language import is_english, latin_language

NOT_ENGLISH = [
    "夕暮れの灯台",
    "猫",
    "サイバーパンクな東京, neon lights",
    "黄昏时的灯塔",
    "고양이가 있는 정원",
    "кошка в саду",
    "ein Fuchs im Schnee",
    "un renard dans la neige",
    "un zorro rojo en la nieve con los árboles",
    "una volpe nella neve con il sole",
    "uma raposa na neve com os pinheiros",
]
ENGLISH = [
    "a lighthouse at dusk",
    "a portrait in the style of 葛飾北斎",
    "a café in Paris",
    "Santa Maria del Fiore at dawn",
    "la dolce vita, film still",
    "Los Angeles at night with la brea tar pits",
    "Das Boot movie poster",
    "Leonardo da Vinci sketch of a flying machine",
    "über cool robot, π symbol",
    "",
    "16:9 4k 8k",
]


@pytest.mark.parametrize("text", NOT_ENGLISH)
def test_prompts_in_other_languages_are_not_english(text: str) -> None:
    assert not is_english(text)


@pytest.mark.parametrize("text", ENGLISH)
def test_english_prompts_with_foreign_names_and_words_stay_english(text: str) -> None:
    assert is_english(text)


def test_the_latin_language_is_named_by_its_small_words() -> None:
    assert latin_language("ein Fuchs im Schnee") == "de"
    assert latin_language("un renard dans la neige") == "fr"
    assert latin_language("a fox in the snow") is None
