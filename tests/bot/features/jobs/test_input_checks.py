"""Checks before anything reaches the provider: a file refused before anything is downloaded
says why, with sizes written the user's way; a prompt's seed is refused outside its range."""

from __future__ import annotations

import pytest

from bot.features.jobs.input_checks import check_attachment, check_prompt
from bot.kernel import MAX_SEED, Attachment, CommandError, speaking

MIB = 1024 * 1024


def refusal(attachment: Attachment, max_bytes: int) -> str:
    with pytest.raises(CommandError) as refused:
        check_attachment(attachment, max_bytes)
    return str(refused.value)


def test_a_file_too_large_names_both_sizes() -> None:
    big = Attachment("fox.png", content_type="image/png", size=3 * MIB // 2)
    assert refusal(big, MIB) == "fox.png is too large (1.5 MiB); images may be at most 1 MiB."
    assert refusal(Attachment("", size=300 * 1024), 200 * 1024) == (
        "That file is too large (300 KiB); images may be at most 200 KiB."
    )


def test_sizes_take_the_decimal_sign_of_the_language_spoken() -> None:
    big = Attachment("fox.png", content_type="image/png", size=3 * MIB // 2)
    with speaking("de"):
        assert "1,5 MiB" in refusal(big, MIB)


def test_a_file_that_is_no_image_is_refused_by_its_type() -> None:
    text = Attachment("notes.txt", content_type="text/plain", size=10)
    assert refusal(text, MIB) == (
        "notes.txt is not an image (text/plain); attach a PNG, JPEG or WebP."
    )


def prompt_refusal(prompt: str) -> str:
    with pytest.raises(CommandError) as refused:
        check_prompt(prompt)
    return str(refused.value)


def test_a_seed_is_a_whole_number_in_the_range_diffusion_takes() -> None:
    assert prompt_refusal("a cat --seed -5") == (
        "--seed must be a whole number from 0 to 4294967295 (got '-5')."
    )
    assert prompt_refusal("a cat --seed 99999999999") == (
        "--seed must be a whole number from 0 to 4294967295 (got '99999999999')."
    )
    assert "0 to 4294967295" in prompt_refusal("a cat --sameseed 4294967296")
    assert "(got '²')" in prompt_refusal("a cat --seed ²")
    check_prompt(f"a cat --seed {MAX_SEED} --sameseed 0")
