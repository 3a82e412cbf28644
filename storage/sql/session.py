"""How queries talk to a database, whichever it is: a :class:`Session` runs statements, a
:class:`Database` is a session in autocommit that also opens transactions, holds locks between
processes and listens for their notices.

Statements use ``?`` placeholders; rows come back as dicts keyed by column name, the same on
every backend (JSON columns as text on SQLite, decoded on PostgreSQL: :func:`storage.rows.from_json`
reads both). Every failure is a :class:`storage.StorageError`.

Inside a transaction, await nothing but its statements: on SQLite the transaction keeps every
other statement of the process waiting until it ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, TypeVar

from storage.rows import Row
from storage.sql.dialect import Dialect

T = TypeVar("T")
Values = Sequence[Any]


class Session(Protocol):
    """Statements on one connection (in a transaction, or each committing on its own)."""

    @property
    def dialect(self) -> Dialect: ...

    async def fetch_one(self, sql: str, values: Values = ()) -> Row | None:
        """The first row of ``sql``, or None."""
        ...

    async def fetch_all(self, sql: str, values: Values = ()) -> list[Row]:
        """Every row of ``sql``."""
        ...

    async def execute(self, sql: str, values: Values = ()) -> int:
        """Run one statement; how many rows it changed."""
        ...

    async def execute_many(self, sql: str, rows: Iterable[Values]) -> int:
        """Run one statement once per row of values; how many rows they changed."""
        ...


class Database(Session, Protocol):
    """A database: each statement given to it commits on its own. ``repeatable``: running the
    statement twice does no harm, so it runs again on a fresh connection when the first was
    lost under it (PostgreSQL); reads are, writes are not unless said so."""

    @property
    def where(self) -> str:
        """The database, for messages (no credentials)."""
        ...

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        ...

    async def fetch_one(
        self, sql: str, values: Values = (), *, repeatable: bool = True
    ) -> Row | None:
        """The first row of ``sql``, or None."""
        ...

    async def fetch_all(
        self, sql: str, values: Values = (), *, repeatable: bool = True
    ) -> list[Row]:
        """Every row of ``sql``."""
        ...

    async def execute(self, sql: str, values: Values = (), *, repeatable: bool = False) -> int:
        """Run one statement; how many rows it changed."""
        ...

    async def transaction(
        self, work: Callable[[Session], Awaitable[T]], *, repeatable: bool = False
    ) -> T:
        """``work(session)`` in one transaction: committed when it returns, rolled back when
        it raises. ``repeatable``: run again in a fresh transaction when the connection was
        lost under the first."""
        ...

    def lock(self, key: str | int, *, wait: float) -> AbstractAsyncContextManager[None]:
        """Hold a lock on ``key`` for the block, across processes: those that ask for the same
        key get it one after the other, in the order they asked; released if the holder's
        process dies. Waits at most ``wait`` seconds for it (else :class:`StorageError`)."""
        ...

    def listen(self, channel: str) -> AsyncIterator[str | None]:
        """None once listening on ``channel`` has started, then the payload of every notice
        sent to it, as they come; :class:`StorageError` when the connection is lost. Only the
        None where the database has one process."""
        ...

    async def close(self) -> None:
        """Finish the statements under way, then release the database; twice is harmless."""
        ...
