"""How queries talk to a database, whichever it is: a :class:`Session` runs statements; a
:class:`Database` is a session whose statements each commit on their own, and it opens
transactions, holds locks between processes and listens for their notices.

Statements use ``?`` placeholders; rows come back as dicts keyed by column name (JSON columns as
text on SQLite, decoded on PostgreSQL: :func:`from_json` reads both). Every failure
is a :class:`storage.StorageError`. Inside a transaction, await nothing but its statements: on
SQLite it keeps every other statement of the process waiting until it ends.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from storage.sql.dialect import Dialect

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")
R = TypeVar("R", bound="DataclassInstance")
Values = Sequence[Any]
Row = dict[str, Any]


def to_json(value: Any) -> str:
    """Compact JSON text for a JSON column."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def from_json(value: Any, default: Any) -> Any:
    """The value of a JSON column: ``default`` for NULL, text decoded, anything else (a driver
    that decodes JSON itself) as it is."""
    if value is None:
        return default
    if isinstance(value, str | bytes):
        return json.loads(value)
    return value


def record(kind: type[R], row: Row, **given: Any) -> R:
    """The record ``kind`` (a dataclass) of ``row``: each field the column of its name (a field
    without one keeps its default), but for those ``given``."""
    values = {name: row[name] for name in _fields(kind) if name in row and name not in given}
    return kind(**values, **given)


@functools.cache
def _fields(kind: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(field.name for field in fields(kind))


class Session(Protocol):
    """Statements on one connection; ``execute`` answers how many rows changed."""

    @property
    def dialect(self) -> Dialect: ...

    async def fetch_one(self, sql: str, values: Values = ()) -> Row | None: ...

    async def fetch_all(self, sql: str, values: Values = ()) -> list[Row]: ...

    async def execute(self, sql: str, values: Values = ()) -> int: ...

    async def execute_many(self, sql: str, rows: Iterable[Values]) -> int: ...

    async def execute_each(self, sql: str, rows: Iterable[Values]) -> list[int]:
        """``sql`` once per row of values, sent together (PostgreSQL: one pipeline, one round
        trip); how many rows each one changed."""

    async def fetch_each(self, statements: Iterable[tuple[str, Values]]) -> list[list[Row]]:
        """Each statement with its values, in order, sent together (PostgreSQL: one pipeline,
        one round trip); the rows each one returned (none for a statement that returns no
        rows)."""


class Database(Session, Protocol):
    """A database. ``repeatable``: the statement does no harm run twice, so it runs again on a
    fresh connection when the first was lost under it (PostgreSQL); reads are, writes are not
    unless said so."""

    where: str
    """The database, for messages (no credentials)."""
    closed: bool

    async def fetch_one(
        self, sql: str, values: Values = (), *, repeatable: bool = True
    ) -> Row | None: ...

    async def fetch_all(
        self, sql: str, values: Values = (), *, repeatable: bool = True
    ) -> list[Row]: ...

    async def execute(self, sql: str, values: Values = (), *, repeatable: bool = False) -> int: ...

    async def fetch_each(
        self, statements: Iterable[tuple[str, Values]], *, repeatable: bool = False
    ) -> list[list[Row]]:
        """:meth:`Session.fetch_each`; ``repeatable`` when every statement is (not by default:
        a pipeline may carry writes)."""

    async def transaction(
        self, work: Callable[[Session], Awaitable[T]], *, repeatable: bool = False
    ) -> T:
        """``work(session)`` in one transaction: committed when it returns, rolled back when
        it raises (run again in a fresh one, ``repeatable``, when the connection was lost)."""

    def lock(self, key: str | int, *, wait: float, name: str) -> AbstractAsyncContextManager[None]:
        """Hold a lock on ``key`` (``name`` in messages) for the block, across processes: those
        that ask for the same key get it one after the other, in the order they asked;
        released if the holder's process dies. Waits at most ``wait`` seconds for it (else
        :class:`StorageError`)."""

    def listen(self, channel: str) -> AsyncIterator[str | None]:
        """None once listening on ``channel`` has started, then the payload of each notice
        sent to it; :class:`StorageError` when the connection is lost. Only the None where
        the database has one process."""

    async def close(self) -> None:
        """Finish the statements under way, then release the database; twice is harmless."""
