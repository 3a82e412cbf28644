"""PostgreSQL addresses, described without their credentials."""

from __future__ import annotations

import psycopg
from psycopg.conninfo import conninfo_to_dict


def describe_url(url: str) -> str:
    """``host:port/database`` of a PostgreSQL URL, never its password."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "an unreadable PostgreSQL URL"
    host = str(parts.get("host") or "localhost")
    port = str(parts.get("port") or 5432)
    return f"{host}:{port}/{parts.get('dbname') or parts.get('user') or ''}"
