"""The archive: posted jobs, newest first, a page at a time, found by the words of their
prompts through a full-text index (SQLite FTS5, PostgreSQL ``tsvector`` + GIN: the spelling is
:meth:`storage.sql.dialect.Dialect.prompt_has_words`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from storage.queries.jobs import job_from_row
from storage.records.jobs import Job, JobSearch
from storage.sql.dialect import WordsPlan, marks
from storage.sql.session import Database

RARE_WORDS: Final = 10_000
"""A user's search: when at most this many prompts have the words, SQLite reads them first,
else it walks the user's jobs newest first, each looked up (docs/benchmarks.md §4d)."""
FEW_WORDS: Final = 1_000
"""A workspace's search (admins): when at most this many prompts have the words, SQLite reads
them first; up to :data:`MANY_WORDS`, it walks the workspace's jobs against the set of matches;
past that, it walks them each looked up (docs/benchmarks.md §4d)."""
MANY_WORDS: Final = 50_000


@dataclass
class JobArchive:
    """Searching posted jobs (see :class:`JobSearch`)."""

    db: Database

    async def search(self, search: JobSearch, limit: int) -> list[Job]:
        """The newest ``limit`` posted jobs ``search`` finds, newest first."""
        where = ["platform = ?", "status = 'posted'"]
        values: list[Any] = [search.platform]
        if search.requester_id is None:
            where.append("is_dm = ?")
            values.append(False)
        else:
            where.append("requester_id = ?")
            values.append(search.requester_id)
        for column, value in (
            ("workspace_id", search.workspace_id),
            ("family", search.family),
            ("channel_id", search.channel_id),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                values.append(value)
        if search.types:
            where.append(f"type IN ({marks(len(search.types))})")
            values.extend(search.types)
        if search.since is not None:
            where.append("created_at >= ?")
            values.append(search.since)
        if search.until is not None:
            where.append("created_at < ?")
            values.append(search.until)
        if search.after is not None:
            where.append("(created_at, id) < (SELECT created_at, id FROM jobs WHERE id = ?)")
            values.append(search.after)
        if search.words:
            plan = await self._plan(search.words, workspace=search.requester_id is None)
            condition, terms = self.db.dialect.prompt_has_words(search.words, plan=plan)
            where.append(condition)
            values.append(terms)
        sql = (
            f"SELECT * FROM jobs WHERE {' AND '.join(where)}"
            " ORDER BY created_at DESC, id DESC LIMIT ?"
        )
        rows = await self.db.fetch_all(sql, (*values, max(limit, 0)))
        return [job_from_row(row) for row in rows]

    async def _plan(self, words: tuple[str, ...], *, workspace: bool) -> WordsPlan:
        """How SQLite finds ``words`` best, by how many prompts have them all (counted up to
        the largest threshold that matters)."""
        sql = self.db.dialect.prompts_with_words
        if sql is None:
            return "matches first"
        _, terms = self.db.dialect.prompt_has_words(words)
        most = MANY_WORDS if workspace else RARE_WORDS
        row = await self.db.fetch_one(sql, (terms, most + 1))
        found = 0 if row is None else int(row["found"])
        if found <= (FEW_WORDS if workspace else RARE_WORDS):
            return "matches first"
        if workspace and found <= MANY_WORDS:
            return "jobs against the matches"
        return "jobs each looked up"
