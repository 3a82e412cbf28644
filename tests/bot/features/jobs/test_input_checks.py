"""A file refused before anything is downloaded says why, with sizes written the user's way."""

from __future__ import annotations

import pytest

from bot.features.jobs.input_checks import check_attachment
from bot.kernel import Attachment, CommandError, speaking

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
