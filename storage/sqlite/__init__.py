"""The SQLite backend (through sqlite-utils): one file, one process, zero setup."""

from storage.sqlite.schema import LATEST_VERSION, MIGRATIONS, Migration, migrate
from storage.sqlite.store import SqliteStore

__all__ = ["LATEST_VERSION", "MIGRATIONS", "Migration", "SqliteStore", "migrate"]
