"""The PostgreSQL backend (psycopg 3 with a connection pool): many processes, one database."""

from storage.postgres.schema import LATEST_VERSION, MIGRATIONS, Migration, migrate
from storage.postgres.store import PostgresStore, describe_url

__all__ = ["LATEST_VERSION", "MIGRATIONS", "Migration", "PostgresStore", "describe_url", "migrate"]
