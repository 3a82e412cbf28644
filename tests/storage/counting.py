"""A real database with a tally: :class:`CountingDatabase` wraps a store's
:class:`~storage.sql.session.Database` and records every round trip the store makes (a
statement, a batch or a transaction) with the statements it carried, for tests that count
what a flow asks of storage."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TypeVar

from storage import Store
from storage.queries.tracking import SQL_CLAIM_DELIVERY
from storage.sql.dialect import Dialect
from storage.sql.session import Database, Row, Session, Values

T = TypeVar("T")


@dataclass
class Trip:
    """One round trip: its statements (SQL and values, one per row of a batch) and the rows
    they read."""

    statements: list[tuple[str, Values]] = field(default_factory=list)
    rows_read: int = 0
    values_read: int = 0
    """The values (a row's columns each) those rows held: a job read whole is one per column,
    a move answering only whether it moved (``RETURNING id``) one."""
    rows_written: int = 0
    """Rows its writing statements changed, as the database counted them."""
    sends: int = 0
    """How many times it sent statements to the database and waited for their answers (a
    batch or a pipeline once)."""

    def read(self, rows: list[Row]) -> None:
        """Count ``rows`` as read by one of its statements."""
        self.rows_read += len(rows)
        self.values_read += sum(len(row) for row in rows)

    def moves_to(self, status: str) -> int:
        """How many of its statements move a job to ``status``."""
        return sum(
            sql.startswith("UPDATE jobs SET status = ?") and values[0] == status
            for sql, values in self.statements
        )

    def claims(self) -> bool:
        """Whether it claims jobs for delivery."""
        return any(
            sql.startswith(SQL_CLAIM_DELIVERY.partition(" WHERE")[0]) for sql, _ in self.statements
        )

    def reads_whole_jobs(self) -> bool:
        return any(sql.startswith("SELECT * FROM jobs") for sql, _ in self.statements)


class _CountingSession:
    def __init__(self, inner: Session, trip: Trip) -> None:
        self._inner = inner
        self._trip = trip

    @property
    def dialect(self) -> Dialect:
        return self._inner.dialect

    async def fetch_one(self, sql: str, values: Values = ()) -> Row | None:
        self._trip.statements.append((sql, values))
        self._trip.sends += 1
        row = await self._inner.fetch_one(sql, values)
        self._trip.read([] if row is None else [row])
        return row

    async def fetch_all(self, sql: str, values: Values = ()) -> list[Row]:
        self._trip.statements.append((sql, values))
        self._trip.sends += 1
        rows = await self._inner.fetch_all(sql, values)
        self._trip.read(rows)
        return rows

    async def execute(self, sql: str, values: Values = ()) -> int:
        self._trip.statements.append((sql, values))
        self._trip.sends += 1
        changed = await self._inner.execute(sql, values)
        self._trip.rows_written += changed
        return changed

    async def execute_many(self, sql: str, rows: Iterable[Values]) -> int:
        batch = list(rows)
        self._trip.statements += [(sql, values) for values in batch]
        self._trip.sends += bool(batch)
        changed = await self._inner.execute_many(sql, batch)
        self._trip.rows_written += changed
        return changed

    async def execute_each(self, sql: str, rows: Iterable[Values]) -> list[int]:
        batch = list(rows)
        self._trip.statements += [(sql, values) for values in batch]
        self._trip.sends += bool(batch)
        changed = await self._inner.execute_each(sql, batch)
        self._trip.rows_written += sum(changed)
        return changed

    async def fetch_each(self, statements: Iterable[tuple[str, Values]]) -> list[list[Row]]:
        batch = list(statements)
        self._trip.statements += batch
        self._trip.sends += bool(batch)
        found = await self._inner.fetch_each(batch)
        self._trip.read([row for rows in found for row in rows])
        return found


class CountingDatabase:
    """``inner`` with every round trip recorded in :attr:`trips` (see the module docstring)."""

    def __init__(self, inner: Database) -> None:
        self.inner = inner
        self.trips: list[Trip] = []
        self.began = asyncio.Event()
        """Set once a round trip is recorded (a transaction: when it begins)."""
        self.committed = asyncio.Event()
        """Set once a transaction committed."""
        self.where = inner.where
        self.closed = inner.closed

    @property
    def dialect(self) -> Dialect:
        return self.inner.dialect

    def _record(self, trip: Trip) -> Trip:
        self.trips.append(trip)
        self.began.set()
        return trip

    def _session(self) -> _CountingSession:
        trip = self._record(Trip())
        return _CountingSession(self.inner, trip)

    async def fetch_one(
        self, sql: str, values: Values = (), *, repeatable: bool = True
    ) -> Row | None:
        trip = self._record(Trip([(sql, values)], sends=1))
        row = await self.inner.fetch_one(sql, values, repeatable=repeatable)
        trip.read([] if row is None else [row])
        return row

    async def fetch_all(
        self, sql: str, values: Values = (), *, repeatable: bool = True
    ) -> list[Row]:
        trip = self._record(Trip([(sql, values)], sends=1))
        rows = await self.inner.fetch_all(sql, values, repeatable=repeatable)
        trip.read(rows)
        return rows

    async def execute(self, sql: str, values: Values = (), *, repeatable: bool = False) -> int:
        trip = self._record(Trip([(sql, values)], sends=1))
        trip.rows_written = await self.inner.execute(sql, values, repeatable=repeatable)
        return trip.rows_written

    async def execute_many(self, sql: str, rows: Iterable[Values]) -> int:
        return await self._session().execute_many(sql, rows)

    async def execute_each(self, sql: str, rows: Iterable[Values]) -> list[int]:
        return await self._session().execute_each(sql, rows)

    async def fetch_each(
        self, statements: Iterable[tuple[str, Values]], *, repeatable: bool = False
    ) -> list[list[Row]]:
        batch = list(statements)
        trip = self._record(Trip(batch, sends=bool(batch)))
        found = await self.inner.fetch_each(batch, repeatable=repeatable)
        trip.read([row for rows in found for row in rows])
        return found

    async def transaction(
        self, work: Callable[[Session], Awaitable[T]], *, repeatable: bool = False
    ) -> T:
        trip = self._record(Trip())
        answer = await self.inner.transaction(
            lambda session: work(_CountingSession(session, trip)), repeatable=repeatable
        )
        self.committed.set()
        return answer

    def lock(self, key: str | int, *, wait: float, name: str) -> AbstractAsyncContextManager[None]:
        return self.inner.lock(key, wait=wait, name=name)

    def listen(self, channel: str) -> AsyncIterator[str | None]:
        return self.inner.listen(channel)

    async def close(self) -> None:
        await self.inner.close()
        self.closed = True


def counted(store: Store) -> CountingDatabase:
    """Count ``store``'s round trips from now on: its ports (and whoever holds them) run on the
    counting database."""
    counting = CountingDatabase(store.db)
    store.db = counting
    for port in vars(store).values():
        if hasattr(port, "db"):
            port.db = counting
    return counting
