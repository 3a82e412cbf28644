"""Label values are bounded: anything that is not a short, plain token becomes "other"."""

from __future__ import annotations

import pytest

from bot.api.metrics import OTHER, label


@pytest.mark.parametrize("value", ["imagine", "diffusion.txt2img", "/gen/v2/fetch", "429", "web"])
def test_plain_label_values_pass(value: str) -> None:
    assert label(value) == value


@pytest.mark.parametrize("value", ["", "x" * 49, "two words", "ünïcode", "a\nb", "{}"])
def test_anything_else_is_other(value: str) -> None:
    assert label(value) == OTHER
