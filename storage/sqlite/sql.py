"""Small helpers shared by the store's modules; all run on the store's worker thread."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlite_utils import Database

from storage.rows import Row


@contextmanager
def write_transaction(db: Database) -> Iterator[Database]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``: takes the write lock up front (no lock-upgrade
    deadlocks between connections) and commits before returning; rolls back on error."""
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        raise
    db.conn.execute("COMMIT")


def fetch_all(db: Database, sql: str, parameters: Sequence[Any] = ()) -> list[Row]:
    """Rows of ``sql`` as dicts."""
    cursor = db.conn.execute(sql, parameters)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def fetch_one(db: Database, sql: str, parameters: Sequence[Any] = ()) -> Row | None:
    """The first row of ``sql`` as a dict, or None."""
    cursor = db.conn.execute(sql, parameters)
    values = cursor.fetchone()
    if values is None:
        return None
    return dict(zip([column[0] for column in cursor.description], values, strict=True))


def placeholders(count: int) -> str:
    """``?, ?, …`` for an ``IN (…)`` list of ``count`` values."""
    if count < 1:
        raise ValueError("an IN list needs at least one value")
    return ", ".join("?" * count)
