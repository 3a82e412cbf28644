"""Errors raised by the storage layer, and the check that refuses a word outside its vocabulary."""

from typing import Any, get_args


class StorageError(Exception):
    """A storage operation failed (database error, bad schema version, invalid argument)."""


class StoreClosedError(StorageError):
    """The store was used after ``close``."""


def check_word(value: str, vocabulary: Any, what: str) -> None:
    """Refuse ``value`` unless it is a word of the ``Literal`` type ``vocabulary``."""
    words = get_args(vocabulary)
    if value not in words:
        raise StorageError(f"unknown {what} {value!r} (one of: {', '.join(words)})")
