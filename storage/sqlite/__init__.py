"""The SQLite backend (through sqlite-utils): one file, one process, zero setup."""

from storage.sqlite.store import SqliteStore as SqliteStore
