"""Fixtures for the chat engine tests (see ``support.chat_world``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.bot.features.chat.support import ChatWorld, chat_world


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[ChatWorld]:
    async with chat_world(tmp_path) as started:
        yield started
