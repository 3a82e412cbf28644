"""What differs between SQLite and PostgreSQL in genbot's SQL, in one place.

Queries are written once with ``?`` placeholders (SQLite's own; PostgreSQL's driver gets
``%s``). Everything else genbot asks is portable SQL (``RETURNING``, ``ON CONFLICT``, row
values, window functions, ``COALESCE``) but for what this module spells per backend: row locks
(``FOR UPDATE``, with ``SKIP LOCKED`` for claims), transaction-scoped advisory locks, wakeup
notices between processes (``NOTIFY``), reading into JSON values, and the full-text index of
prompts (SQLite: the FTS5 table ``job_words``; PostgreSQL: ``jobs.prompt_words``, a GIN-indexed
``tsvector``; both fold case and split words alike, without stemming). SQLite needs none of the
locks and notices: one process owns its file, and ``BEGIN IMMEDIATE`` serialises its writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Literal

WordsPlan = Literal["matches first", "jobs against the matches", "jobs each looked up"]
"""How SQLite finds the jobs whose prompts have some words, newest first: ``matches first``
reads the matching prompts from the index of words, then their jobs, and sorts them (words in
few prompts); ``jobs against the matches`` walks the jobs newest first on an index and keeps
those in the set of matches, read once (words in many prompts of a large scope);
``jobs each looked up`` walks the jobs newest first and looks each up in the index of words
(words in most prompts: the walk is short)."""


@dataclass(frozen=True)
class Dialect:
    """One backend's spelling of the few things that are not portable."""

    name: Literal["sqlite", "postgres"]
    shared: bool
    """Whether several processes use one database at the same time."""
    for_update: str
    """Appended to a ``SELECT`` whose rows the transaction goes on to change."""
    skip_locked: str
    """Appended to a ``SELECT`` that claims rows, so concurrent claimers split them."""
    transaction_lock: str | None
    """A statement taking a lock on one text key until the transaction ends (None: the write
    transaction is the lock)."""
    transaction_locks: str | None
    """:attr:`transaction_lock` on each text key of its one value (a list), in its order."""
    notify: str | None
    """A statement sending a payload to a channel's listeners (None: nobody else to tell)."""
    notify_each: str | None
    """:attr:`notify` of each payload of its second value (a list), in its order."""
    table_exists: str
    """A query with a row when the table named by its one value exists."""
    server_time: str | None
    """An expression for the server's wall clock now, in seconds since the epoch (None: the
    database has no server of its own, its clock is this host's)."""

    def statement(self, sql: str) -> str:
        """``sql`` as this backend's driver takes it."""
        return sql if self.name == "sqlite" else _pyformat(sql)

    def json_elements(self, table: str, column: str) -> str:
        """A ``SELECT`` of the text elements of the JSON arrays in ``table.column``."""
        if self.name == "sqlite":
            return f"SELECT value FROM {table}, json_each({table}.{column})"
        return f"SELECT jsonb_array_elements_text({column}) FROM {table}"

    def json_number(self, column: str, key: str) -> str:
        """The number at ``key`` of the JSON object in ``column``."""
        if self.name == "sqlite":
            return f"json_extract({column}, '$.{key}')"
        return f"({column}->>'{key}')::double precision"

    def json_text(self, column: str, key: str) -> str:
        """The text at ``key`` of the JSON object in ``column`` (NULL when absent or null)."""
        if self.name == "sqlite":
            return f"json_extract({column}, '$.{key}')"
        return f"({column}->>'{key}')"

    def json_merged(self, column: str) -> str:
        """The JSON object in ``column`` with the keys of the JSON object given as the one value
        set to that object's values (its other keys as stored). Those values replace what is
        stored whole: they must not be objects or null (SQLite merges objects into objects and
        drops keys given null, PostgreSQL does neither)."""
        if self.name == "sqlite":
            return f"json_patch({column}, ?)"
        return f"({column} || CAST(? AS jsonb))"

    def json_contains(self, column: str, value: str) -> str:
        """Whether the JSON array in ``column`` has the text ``value`` (an expression)."""
        if self.name == "sqlite":
            return f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = {value})"
        return f"jsonb_exists({column}, {value})"

    def prompt_has_words(
        self, words: Sequence[str], *, plan: WordsPlan = "matches first"
    ) -> tuple[str, str]:
        """A condition on ``jobs`` true when its prompt has every one of ``words`` (letters
        and digits only), and the one value it takes. SQLite's planner cannot tell rare words
        from common ones, so the caller says how (:attr:`prompts_with_words` counts them), in
        :data:`WordsPlan`'s terms (PostgreSQL's planner chooses by itself)."""
        if self.name == "postgres":
            return "prompt_words @@ plainto_tsquery('simple', ?)", " ".join(words)
        terms = " ".join(f'"{word}"' for word in words)
        matches = "SELECT rowid FROM job_words WHERE job_words MATCH ?"
        if plan == "matches first":
            return f"rowid IN ({matches})", terms
        if plan == "jobs against the matches":
            return f"+rowid IN ({matches})", terms
        lookup = "SELECT 1 FROM job_words WHERE job_words MATCH ? AND job_words.rowid = jobs.rowid"
        return f"EXISTS ({lookup})", terms

    @property
    def prompts_with_words(self) -> str | None:
        """A query counting the prompts with every word (:meth:`prompt_has_words`'s value),
        up to its second value (``found``); None where the planner needs no telling."""
        if self.name == "postgres":
            return None
        return (
            "SELECT COUNT(*) AS found FROM"
            " (SELECT rowid FROM job_words WHERE job_words MATCH ? LIMIT ?)"
        )


@lru_cache(maxsize=2048)
def _pyformat(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


SQLITE: Final = Dialect(
    "sqlite",
    shared=False,
    for_update="",
    skip_locked="",
    transaction_lock=None,
    transaction_locks=None,
    notify=None,
    notify_each=None,
    table_exists="SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?",
    server_time=None,
)
POSTGRES: Final = Dialect(
    "postgres",
    shared=True,
    for_update=" FOR UPDATE",
    skip_locked=" FOR UPDATE SKIP LOCKED",
    transaction_lock="SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
    transaction_locks=(
        "SELECT pg_advisory_xact_lock(hashtextextended(key, 0))"
        " FROM unnest(CAST(? AS text[])) WITH ORDINALITY AS keys (key, n) ORDER BY n"
    ),
    notify="SELECT pg_notify(?, ?)",
    notify_each=(
        "SELECT pg_notify(?, payload)"
        " FROM unnest(CAST(? AS text[])) WITH ORDINALITY AS payloads (payload, n) ORDER BY n"
    ),
    table_exists="SELECT 1 AS found WHERE to_regclass(?) IS NOT NULL",
    server_time="CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS double precision)",
)


def text_inside(text: str) -> str:
    """A ``LIKE … ESCAPE '\\'`` pattern matching text with ``text`` in it."""
    return "%" + "".join("\\" + c if c in "\\%_" else c for c in text) + "%"


def json_string_inside(text: str) -> str:
    """A ``LIKE … ESCAPE '\\'`` pattern matching JSON (as text) with the string ``text`` in it."""
    return text_inside(f'"{text}"')


def marks(count: int) -> str:
    """``?, ?, …`` for an ``IN (…)`` list of ``count`` values."""
    if count < 1:
        raise ValueError("an IN list needs at least one value")
    return ", ".join("?" * count)
