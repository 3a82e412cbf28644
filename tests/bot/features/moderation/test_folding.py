"""Folding: what moderation reads instead of what a user typed."""

from __future__ import annotations

import pytest

from bot.features.moderation.folding import fold, fold_pattern


@pytest.mark.parametrize(
    ("typed", "words"),
    [
        ("NUDE", "nude"),
        ("ｎｕｄｅ", "nude"),  # full-width
        ("𝐧𝐮𝐝𝐞", "nude"),  # mathematical bold
        ("nüdé", "nude"),  # accents
        ("nuԁе", "nude"),  # Cyrillic d and e
        ("νυδε", "vuδe"),  # Greek: only its Latin look-alikes (ν υ ε) are folded
        ("n\u200bu\u200dde", "nude"),  # zero-width characters
        ("n.u.d.e", "nude"),
        ("n-u_d*e", "nude"),
        ("n u d e pics", "nude pics"),
        ("nud3", "nude"),
        ("self-harm", "seif harm"),  # "l" reads "i" on both sides
        ("a fox in the snow.", "a fox in the snow"),
        ("a b fox", "a b fox"),  # two single letters stay words
    ],
)
def test_what_folding_reads(typed: str, words: str) -> None:
    assert fold(typed).words == f" {words} "
    assert fold(typed).joined == words.replace(" ", "")


def test_a_pattern_folds_its_letters_but_keeps_its_syntax() -> None:
    assert fold_pattern(r"K(I|L)LL$\d{2}") == r"k(i|i)ii$\d{2}"
    assert fold_pattern(r"K\W\S\D\B\pL\PL\p{Greek}\P{Lu}\.L\\L") == (
        r"k\W\S\D\B\pL\PL\p{Greek}\P{Lu}\.i\\i"
    )


def test_a_patterns_group_names_flags_and_classes_are_kept_as_written() -> None:
    """qa2 D12: ``(?P<name>…)`` folded to ``(?p<name>…)``, which RE2 refuses; the letters of
    the group stay folded like the text's."""
    assert fold_pattern(r"(?P<Label>NUDE)(?P=Label)") == r"(?P<Label>nude)(?P=Label)"
    assert fold_pattern(r"(?<Label>Lo)") == r"(?<Label>io)"
    assert fold_pattern(r"(?U)GOR+E(?i:Kill)(?-s:L)") == r"(?U)gor+e(?i:kiii)(?-s:i)"
    assert fold_pattern(r"[[:alpha:]L][[:^blank:]]") == r"[[:alpha:]i][[:^blank:]]"
    assert fold_pattern(r"(?<=L)(?!L)") == r"(?<=i)(?!i)", "lookaround is no name"


def test_a_patterns_accented_letters_lose_their_accents_as_the_texts_do() -> None:
    assert fold_pattern(r"MÄDCHEN\W+nackt") == r"madchen\W+nackt"
    assert fold_pattern(r"[äöü]ber\pL\S\p{Greek}É\W") == r"[aou]ber\pL\S\p{Greek}e\W"
    assert fold_pattern("cafe\u0301s?") == "cafes?", "a decomposed accent too"
    assert fold_pattern("[\u0300-\u036f]x") == "[\u0300-\u036f]x", "a mark on no letter stays"
