"""The collector set for serving: startup's objects frozen, the young generation collected less
often."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from genbot.collector import SERVING_THRESHOLDS, settle_for_serving


@pytest.fixture
def restored() -> Iterator[None]:
    """The test process's collector as it was."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


class Node:
    """An object the collector tracks."""


@pytest.mark.usefixtures("restored")
def test_startup_objects_are_frozen_and_young_collections_are_rarer() -> None:
    startup = Node()

    frozen = settle_for_serving()

    assert frozen == gc.get_freeze_count() > 0
    assert gc.get_threshold() == SERVING_THRESHOLDS
    assert all(
        not any(o is startup for o in gc.get_objects(generation)) for generation in (0, 1, 2)
    )
