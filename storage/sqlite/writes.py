"""Shared write budgets on SQLite: one process uses the database, its own budget suffices."""

from __future__ import annotations

from collections.abc import Sequence

from storage.records import WriteWindow
from storage.sqlite.base import StoreBase


class SqliteWriteBudgets(StoreBase):
    """Write budget method of :class:`storage.sqlite.SqliteStore`."""

    async def reserve_writes(
        self, windows: Sequence[WriteWindow], *, spacing: float = 0.0
    ) -> float:
        """Always room: no other process writes through this database."""
        return 0.0
