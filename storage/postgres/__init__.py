"""The PostgreSQL backend (psycopg 3, a cancel-safe pool): many processes, one database."""

from storage.postgres.schema import LATEST_VERSION, MIGRATIONS, Migration, migrate
from storage.postgres.store import PostgresStore
from storage.postgres.urls import describe_url

__all__ = ["LATEST_VERSION", "MIGRATIONS", "Migration", "PostgresStore", "describe_url", "migrate"]
