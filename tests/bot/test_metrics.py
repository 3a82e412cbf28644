"""Label values are bounded: anything that is not a short, plain token becomes "other"."""

from __future__ import annotations

import pytest

from bot.metrics import JOBS, OTHER, label, set_job_counts


@pytest.mark.parametrize("value", ["imagine", "diffusion.txt2img", "/gen/v2/fetch", "429", "web"])
def test_plain_label_values_pass(value: str) -> None:
    assert label(value) == value


@pytest.mark.parametrize("value", ["", "x" * 49, "two words", "ünïcode", "a\nb", "{}"])
def test_anything_else_is_other(value: str) -> None:
    assert label(value) == OTHER


def test_job_counts_replace_the_previous_ones() -> None:
    set_job_counts([("pending", "web", 2), ("finished", "discord", 1)])
    set_job_counts([("pending", "web", 3)])
    samples = {
        tuple(sorted(sample.labels.items())): sample.value
        for family in JOBS.collect()
        for sample in family.samples
    }
    assert samples == {(("platform", "web"), ("state", "pending")): 3.0}
