"""Conversation locks on SQLite: the database has one process, whose own locks suffice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from storage.sqlite.base import StoreBase


class SqliteConversationLocks(StoreBase):
    """Conversation lock of :class:`storage.sqlite.SqliteStore`."""

    @asynccontextmanager
    async def conversation_lock(self, conversation_id: int) -> AsyncIterator[None]:
        """Nothing to take: no other process shares a SQLite database."""
        yield
