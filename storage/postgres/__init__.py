"""The PostgreSQL backend (psycopg 3, a cancel-safe pool): many processes, one database."""

from storage.postgres.database import describe_url as describe_url
from storage.postgres.store import PostgresStore as PostgresStore
