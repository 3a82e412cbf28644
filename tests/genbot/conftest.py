"""Fixtures shared by the tests of the ``genbot`` package."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """The root logger's handlers and level, and the log record factory, as they were before
    the test configured logging."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    factory = logging.getLogRecordFactory()
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.setLogRecordFactory(factory)
