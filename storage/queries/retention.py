"""Retention: what genbot keeps about one user and forgetting it (``/forget-me``), and purging
what is older than its kind's ``keep_days``, by one process of the cluster at a time.

:data:`USER_DATA` is the one list of the kinds of a user's data: how each is counted (the
preview) and how it goes (the deletion). :data:`ERASED` lists, table by table, how a user's rows
go; :data:`NAMES_NO_USER` the tables that name none (``tests/storage/test_retention.py`` holds
every table of the schema to one of the two, and searches every table of both backends for a
forgotten user's id). The playground's tables are counted and erased by its adapter, which also
drops what it shows (:meth:`storage.PlaygroundHistory.about_user` and ``forget_user``)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from storage.queries.base import Clock
from storage.records.jobs import TERMINAL_STATUSES
from storage.records.retention import Cutoffs, KeptAbout, Purged
from storage.sql.dialect import json_string_inside, marks
from storage.sql.schema import TYPES
from storage.sql.session import Database, Session

_DONE: Final = tuple(sorted(TERMINAL_STATUSES))
_IS_DONE: Final = "status IN ({})".format(", ".join(f"'{status}'" for status in _DONE))
ERASED: Final[dict[str, str]] = {
    "conversations": "the conversations they started (created_by), deleted",
    "messages": "deleted with their conversation; answers to them in others' keep no id (asked_by)",
    "chat_feedback": "their ratings of answers, deleted",
    "conversation_links": "deleted with their conversation",
    "jobs": "their finished jobs (requester_id), deleted; other jobs made from them lose the link",
    "job_messages": "deleted with their job",
    "job_words": "SQLite's index of prompts, kept by the jobs' triggers",
    "usage": "their rows folded into anonymous ones (user_id '') per platform, day and kind",
    "scope_settings": "their own settings (kind user), deleted",
    "moderation_offences": "their offences and bans, deleted",
    "moderation_rules": "rules they added name a pseudonym instead (added_by)",
    "audit_log": "entries by or about them name a pseudonym; their refused texts are dropped",
    "playground_messages": "their messages, answers to them and their DM (the web adapter)",
    "playground_images": "the images only those messages showed (the web adapter)",
    "hosted_media": "the images hosted for the provider from their uploads (owner), deleted",
    "saved_options": "their saved options and suffix (/prefer), deleted",
    "batches": "their previews of several jobs, and jobs of theirs still queued, deleted",
    "slack_channels_in_view": "the channel they looked at on Slack, deleted",
}
"""How a forgotten user's rows go, per table that can name a user."""
NAMES_NO_USER: Final = frozenset(
    {
        "schema_version", "processed_events", "oauth_states", "processes", "write_slots",
        "playground_meta", "storage_probes", "audit_purge", "purge_turns", "chat_branches",
        "slack_installations",  # the workspace's: forgetting its installer would uninstall it
    }
)  # fmt: skip
"""Tables that name no user (or, for Slack's installation, whose user is the workspace's)."""
PURGE_TURN: Final = "retention"
PURGE_EVERY: Final = 3600.0
"""Seconds between two purges over all processes."""
PURGE_BATCH: Final = 500
"""Rows deleted per statement (short transactions; the purge goes on until none is left)."""
PURGE_LOCK_WAIT: Final = 1.0

_AUDIT_NAMING: Final = (
    "platform = ? AND (actor_id = ? OR target = ? OR CAST(state_before AS TEXT) LIKE ? ESCAPE"
    " '\\' OR CAST(state_after AS TEXT) LIKE ? ESCAPE '\\')"
)
"""The audit entries by, about or mentioning a user (platform, the id twice, its pattern
twice: :func:`storage.sql.dialect.json_string_inside`)."""
_THEIR_CONVERSATIONS: Final = "SELECT id FROM conversations WHERE platform = ? AND created_by = ?"
_THEIR_DONE_JOBS: Final = (
    f"SELECT id FROM jobs WHERE platform = ? AND requester_id = ? AND {_IS_DONE}"
)
SQL_RUNNING: Final = (
    f"SELECT COUNT(*) AS running FROM jobs WHERE platform = ? AND requester_id = ? AND NOT"
    f" {_IS_DONE}"
)
SQL_BANNED_UNTIL: Final = (
    "SELECT MAX(banned_until) AS banned_until FROM moderation_offences WHERE platform = ?"
    " AND user_id = ?"
)


@dataclass(frozen=True)
class Whose:
    """Whose data a statement counts or erases, and the pseudonym the records that stay name
    instead (none while only counting)."""

    platform: str
    user_id: str
    pseudonym: str = ""

    def them(self) -> tuple[object, ...]:
        return (self.platform, self.user_id)

    def naming(self) -> tuple[object, ...]:
        """The values of :data:`_AUDIT_NAMING`."""
        return (self.platform, self.user_id, self.user_id, *(json_string_inside(self.user_id),) * 2)


@dataclass(frozen=True)
class Statement:
    """One SQL statement and its values for a user (``values(whose)``)."""

    sql: str
    values: Callable[[Whose], tuple[object, ...]] = Whose.them


@dataclass(frozen=True)
class UserData:
    """One kind of what genbot keeps about a user: ``count`` counts it (the preview of
    ``/forget-me``, and what its deletion reports, counted in the deleting transaction), and
    ``erase`` makes it go, its statements run in order (none: it goes with another kind, by
    the schema's cascade). After the erasure ``count`` finds none. ``only``: the one platform
    where the kind exists ("": every one)."""

    kind: str
    count: Statement
    erase: tuple[Statement, ...] = ()
    only: str = ""

    def applies(self, platform: str) -> bool:
        return not self.only or self.only == platform


def _audit_rename(whose: Whose) -> tuple[object, ...]:
    quoted = (f'"{whose.user_id}"', f'"{whose.pseudonym}"')
    renamed = (whose.user_id, whose.pseudonym) * 2
    return (*renamed, *quoted, *quoted, *whose.naming())


USER_DATA: Final[tuple[UserData, ...]] = (
    UserData(
        "conversations",
        Statement("SELECT COUNT(*) FROM conversations WHERE platform = ? AND created_by = ?"),
        (Statement("DELETE FROM conversations WHERE platform = ? AND created_by = ?"),),
    ),
    UserData(
        "messages",
        Statement(
            f"SELECT COUNT(*) FROM messages WHERE conversation_id IN ({_THEIR_CONVERSATIONS})"
        ),
    ),
    UserData(
        "answers",
        Statement(
            "SELECT COUNT(*) FROM messages WHERE asked_by = ? AND conversation_id IN (SELECT id"
            " FROM conversations WHERE platform = ? AND (created_by IS NULL OR created_by <> ?))",
            lambda whose: (whose.user_id, whose.platform, whose.user_id),
        ),
        (
            Statement(
                "UPDATE messages SET asked_by = NULL WHERE asked_by = ? AND conversation_id IN"
                " (SELECT id FROM conversations WHERE platform = ?)",
                lambda whose: (whose.user_id, whose.platform),
            ),
        ),
    ),
    UserData(
        "feedback",
        Statement("SELECT COUNT(*) FROM chat_feedback WHERE platform = ? AND user_id = ?"),
        (Statement("DELETE FROM chat_feedback WHERE platform = ? AND user_id = ?"),),
    ),
    UserData(
        "jobs",
        Statement(f"SELECT COUNT(*) FROM ({_THEIR_DONE_JOBS}) AS theirs"),
        (
            Statement(
                "UPDATE jobs SET parent_job_id = NULL WHERE parent_job_id IN"
                f" (SELECT id FROM ({_THEIR_DONE_JOBS}) AS theirs)"
            ),
            Statement(f"DELETE FROM jobs WHERE platform = ? AND requester_id = ? AND {_IS_DONE}"),
        ),
    ),
    UserData(
        "settings",
        Statement(
            "SELECT COUNT(*) FROM scope_settings WHERE platform = ? AND kind = 'user'"
            " AND scope_id = ?"
        ),
        (
            Statement(
                "DELETE FROM scope_settings WHERE platform = ? AND kind = 'user' AND scope_id = ?"
            ),
        ),
    ),
    UserData(
        "saved_options",
        Statement("SELECT COUNT(*) FROM saved_options WHERE platform = ? AND user_id = ?"),
        (Statement("DELETE FROM saved_options WHERE platform = ? AND user_id = ?"),),
    ),
    UserData(
        "batches",
        Statement("SELECT COUNT(*) FROM batches WHERE platform = ? AND requester_id = ?"),
        (Statement("DELETE FROM batches WHERE platform = ? AND requester_id = ?"),),
    ),
    UserData(
        "uploads",
        Statement(
            "SELECT COUNT(*) FROM hosted_media WHERE owner = ?",
            lambda whose: (f"{whose.platform}:{whose.user_id}",),
        ),
        (
            Statement(
                "DELETE FROM hosted_media WHERE owner = ?",
                lambda whose: (f"{whose.platform}:{whose.user_id}",),
            ),
        ),
    ),
    UserData(
        "usage_days",
        Statement("SELECT COUNT(DISTINCT day) FROM usage WHERE platform = ? AND user_id = ?"),
        (
            Statement(
                "INSERT INTO usage (platform, user_id, day, kind, job_id, tokens_prompt,"
                " tokens_completion, credits, created_at) SELECT platform, '', day, kind, NULL,"
                " SUM(tokens_prompt), SUM(tokens_completion), SUM(credits), MIN(created_at)"
                " FROM usage WHERE platform = ? AND user_id = ? GROUP BY platform, day, kind"
            ),
            Statement("DELETE FROM usage WHERE platform = ? AND user_id = ?"),
        ),
    ),
    UserData(
        "moderation_days",
        Statement("SELECT COUNT(*) FROM moderation_offences WHERE platform = ? AND user_id = ?"),
        (Statement("DELETE FROM moderation_offences WHERE platform = ? AND user_id = ?"),),
    ),
    UserData(
        "rules",
        Statement("SELECT COUNT(*) FROM moderation_rules WHERE platform = ? AND added_by = ?"),
        (
            Statement(
                "UPDATE moderation_rules SET added_by = ? WHERE platform = ? AND added_by = ?",
                lambda whose: (whose.pseudonym, whose.platform, whose.user_id),
            ),
        ),
    ),
    UserData(
        "audit_entries",
        Statement(f"SELECT COUNT(*) FROM audit_log WHERE {_AUDIT_NAMING}", Whose.naming),
        (
            Statement(
                "UPDATE audit_log SET state_before = NULL, state_after = NULL WHERE platform = ?"
                " AND target = ? AND kind = 'moderation.refused'"
            ),
            Statement(
                "UPDATE audit_log SET actor_id = CASE WHEN actor_id = ? THEN ? ELSE actor_id END,"
                " target = CASE WHEN target = ? THEN ? ELSE target END,"
                " state_before = CAST(REPLACE(CAST(state_before AS TEXT), ?, ?) AS $json),"
                " state_after = CAST(REPLACE(CAST(state_after AS TEXT), ?, ?) AS $json)"
                f" WHERE {_AUDIT_NAMING}",
                _audit_rename,
            ),
        ),
    ),
    UserData(
        "channel_in_view",
        Statement(
            "SELECT COUNT(*) FROM slack_channels_in_view WHERE user_id = ?",
            lambda whose: (whose.user_id,),
        ),
        (
            Statement(
                "DELETE FROM slack_channels_in_view WHERE user_id = ?",
                lambda whose: (whose.user_id,),
            ),
        ),
        only="slack",
    ),
)
"""Every kind of a user's data the store keeps, in the order ``/forget-me`` names them: the one
list its preview counts and its deletion erases (see :data:`ERASED` for the tables)."""
SQL_UNLINK_CHILDREN: Final = "UPDATE jobs SET parent_job_id = NULL WHERE parent_job_id IN ({})"
SQL_DELETE_JOBS: Final = "DELETE FROM jobs WHERE id IN ({})"
SQL_CLAIM_PURGE: Final = "UPDATE purge_turns SET due_at = ? WHERE name = ? AND due_at <= ?"
SQL_OLD_CONVERSATIONS: Final = "SELECT id AS key FROM conversations WHERE updated_at < ? LIMIT ?"
SQL_DELETE_CONVERSATIONS: Final = "DELETE FROM conversations WHERE id IN ({})"
SQL_OLD_JOBS: Final = f"SELECT id AS key FROM jobs WHERE {_IS_DONE} AND created_at < ? LIMIT ?"
SQL_OLD_IMAGES: Final = "SELECT key FROM playground_images WHERE created_at < ? LIMIT ?"
SQL_DELETE_IMAGES: Final = "DELETE FROM playground_images WHERE key IN ({})"


def new_pseudonym() -> str:
    """What a forgotten user is called where a record must stay (``erased-3fa2c1d0``): random,
    so it leads back to nobody, and the same in every record of one forgetting."""
    return "erased-" + secrets.token_hex(4)


@dataclass
class Retention:
    """What is kept about a user and forgetting it; purging what is past ``keep_days``."""

    db: Database
    clock: Clock

    async def kept(self, platform: str, user_id: str) -> KeptAbout:
        """What the store keeps about ``user_id`` on ``platform``: each kind of
        :data:`USER_DATA` counted, their unfinished jobs and their ban."""
        whose = Whose(platform, user_id)
        them = whose.them()
        running = await self.db.fetch_one(SQL_RUNNING, them)
        banned = await self.db.fetch_one(SQL_BANNED_UNTIL, them)
        assert running is not None and banned is not None
        return KeptAbout(
            await _counted(self.db, whose),
            int(running["running"] or 0),
            float(banned["banned_until"] or 0),
        )

    async def forget(self, platform: str, user_id: str) -> tuple[dict[str, int], str]:
        """Erase what the store keeps about ``user_id`` on ``platform``, kind by kind of
        :data:`USER_DATA` (see :data:`ERASED`), in one transaction; unfinished jobs stay (they
        are still being made). How many of each kind went (counted in the transaction, as
        :meth:`kept` counts them), and the pseudonym the records that stay name instead."""
        whose = Whose(platform, user_id, new_pseudonym())
        json_type = TYPES[self.db.dialect.name]["json"]

        async def work(tx: Session) -> dict[str, int]:
            gone = await _counted(tx, whose)
            for data in USER_DATA:
                if data.applies(platform):
                    for statement in data.erase:
                        sql = statement.sql.replace("$json", json_type)
                        await tx.execute(sql, statement.values(whose))
            return gone

        return await self.db.transaction(work), whose.pseudonym

    async def purge(self, cutoffs: Cutoffs) -> Purged | None:
        """Delete, kind by kind, what is older than its cutoff, when this process is the one to
        purge this hour (None when another one is, or did): the turn is a conditional update
        of its due time, and the purge runs under the cluster's lock on it, so two never
        overlap."""
        now = self.clock()
        turn = (now + PURGE_EVERY, PURGE_TURN, now)
        if await self.db.execute(SQL_CLAIM_PURGE, turn, repeatable=True) != 1:
            return None
        async with self.db.lock("genbot retention purge", wait=PURGE_LOCK_WAIT, name="the purge"):
            return Purged(
                conversations=await self._purge(
                    cutoffs.conversations, SQL_OLD_CONVERSATIONS, SQL_DELETE_CONVERSATIONS
                ),
                job_results=await self._purge(cutoffs.job_results, SQL_OLD_JOBS, None),
                images=await self._purge(cutoffs.images, SQL_OLD_IMAGES, SQL_DELETE_IMAGES),
            )

    async def _purge(self, cutoff: float | None, old: str, delete: str | None) -> int:
        if cutoff is None:
            return 0
        total = 0
        while True:

            async def batch(tx: Session) -> int:
                rows = await tx.fetch_all(old, (cutoff, PURGE_BATCH))
                keys = [row["key"] for row in rows]
                if delete is None:
                    return await _delete_jobs(tx, keys)
                return await tx.execute(delete.format(marks(len(keys))), keys) if keys else 0

            deleted = await self.db.transaction(batch, repeatable=True)
            total += deleted
            if deleted < PURGE_BATCH:
                return total


async def _counted(db: Session | Database, whose: Whose) -> dict[str, int]:
    """Each kind of :data:`USER_DATA` of ``whose`` platform counted, in one statement."""
    kinds = [data for data in USER_DATA if data.applies(whose.platform)]
    sql = "SELECT " + ", ".join(f"({data.count.sql}) AS {data.kind}" for data in kinds)
    values = [value for data in kinds for value in data.count.values(whose)]
    row = await db.fetch_one(sql, values)
    assert row is not None
    return {data.kind: int(row[data.kind] or 0) for data in kinds}


async def _delete_jobs(tx: Session, ids: list[str]) -> int:
    """Delete the jobs ``ids`` (their message links go with them); the jobs made from them
    (an upscale of a grid) stay, without the link to their parent."""
    deleted = 0
    for start in range(0, len(ids), PURGE_BATCH):
        chunk = ids[start : start + PURGE_BATCH]
        await tx.execute(SQL_UNLINK_CHILDREN.format(marks(len(chunk))), chunk)
        deleted += await tx.execute(SQL_DELETE_JOBS.format(marks(len(chunk))), chunk)
    return deleted
