"""The PostgreSQL backend (psycopg 3, a cancel-safe pool): many processes, one database."""

from storage.postgres.store import PostgresStore as PostgresStore
from storage.postgres.urls import describe_url as describe_url
