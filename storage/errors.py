"""Errors raised by the storage layer."""


class StorageError(Exception):
    """A storage operation failed (database error, bad schema version, invalid argument)."""


class StoreClosedError(StorageError):
    """The store was used after ``close``."""
