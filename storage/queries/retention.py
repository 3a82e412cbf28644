"""Retention: what genbot keeps about one user and forgetting it (``/forget-me``), and purging
what is older than its kind's ``keep_days``, by one process of the cluster at a time.

:data:`ERASED` lists, table by table, how a user's rows go; :data:`NAMES_NO_USER` the tables
that name none (``tests/storage/test_retention.py`` holds every table of the schema to one of
the two, and searches every table of both backends for a forgotten user's id). The playground's
tables are erased by its adapter, which also drops what it shows
(:meth:`storage.PlaygroundHistory.forget_user`)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Final

from storage.queries.base import Clock
from storage.records.jobs import TERMINAL_STATUSES
from storage.records.retention import Cutoffs, Purged
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
SQL_FORGET_HOSTED: Final = "DELETE FROM hosted_media WHERE owner = ?"
"""A user's hosted images (their owner is ``platform:user_id``, :class:`bot.kernel.MediaHost`)."""
SQL_KEPT: Final = (
    "SELECT (SELECT COUNT(*) FROM conversations WHERE platform = ? AND created_by = ?)"
    " AS conversations, (SELECT COUNT(*) FROM messages WHERE conversation_id IN (SELECT id"
    " FROM conversations WHERE platform = ? AND created_by = ?)) AS messages,"
    " (SELECT COUNT(*) FROM jobs WHERE platform = ? AND requester_id = ?) AS jobs,"
    " (SELECT COUNT(*) FROM jobs WHERE platform = ? AND requester_id = ? AND status = 'posted')"
    " AS results,"
    f" (SELECT COUNT(*) FROM jobs WHERE platform = ? AND requester_id = ? AND NOT {_IS_DONE})"
    " AS running,"
    " (SELECT COUNT(*) FROM scope_settings WHERE platform = ? AND kind = 'user'"
    " AND scope_id = ?) AS settings,"
    " (SELECT COUNT(DISTINCT day) FROM usage WHERE platform = ? AND user_id = ?) AS usage_days,"
    " (SELECT COUNT(*) FROM moderation_offences WHERE platform = ? AND user_id = ?)"
    " AS moderation_days,"
    " (SELECT MAX(banned_until) FROM moderation_offences WHERE platform = ? AND user_id = ?)"
    " AS banned_until,"
    f" (SELECT COUNT(*) FROM audit_log WHERE {_AUDIT_NAMING}) AS audit_entries"
)
SQL_UNLINK_CHILDREN: Final = "UPDATE jobs SET parent_job_id = NULL WHERE parent_job_id IN ({})"
SQL_THEIR_JOBS: Final = (
    f"SELECT id FROM jobs WHERE platform = ? AND requester_id = ? AND {_IS_DONE}"
)
SQL_DELETE_JOBS: Final = "DELETE FROM jobs WHERE id IN ({})"
SQL_FORGET_CONVERSATIONS: Final = "DELETE FROM conversations WHERE platform = ? AND created_by = ?"
SQL_FOLD_USAGE: Final = (
    "INSERT INTO usage (platform, user_id, day, kind, job_id, tokens_prompt, tokens_completion,"
    " credits, created_at) SELECT platform, '', day, kind, NULL, SUM(tokens_prompt),"
    " SUM(tokens_completion), SUM(credits), MIN(created_at) FROM usage"
    " WHERE platform = ? AND user_id = ? GROUP BY platform, day, kind"
)
SQL_FORGET_USAGE: Final = "DELETE FROM usage WHERE platform = ? AND user_id = ?"
SQL_FORGET_FEEDBACK: Final = "DELETE FROM chat_feedback WHERE platform = ? AND user_id = ?"
SQL_FORGET_ASKED: Final = (
    "UPDATE messages SET asked_by = NULL WHERE asked_by = ? AND conversation_id IN"
    " (SELECT id FROM conversations WHERE platform = ?)"
)
SQL_FORGET_SETTINGS: Final = (
    "DELETE FROM scope_settings WHERE platform = ? AND kind = 'user' AND scope_id = ?"
)
SQL_FORGET_OFFENCES: Final = "DELETE FROM moderation_offences WHERE platform = ? AND user_id = ?"
SQL_FORGET_SAVED_OPTIONS: Final = "DELETE FROM saved_options WHERE platform = ? AND user_id = ?"
SQL_FORGET_BATCHES: Final = "DELETE FROM batches WHERE platform = ? AND requester_id = ?"
SQL_FORGET_IN_VIEW: Final = "DELETE FROM slack_channels_in_view WHERE user_id = ?"
SQL_RENAME_RULES: Final = (
    "UPDATE moderation_rules SET added_by = ? WHERE platform = ? AND added_by = ?"
)
SQL_DROP_REFUSED: Final = (
    "UPDATE audit_log SET state_before = NULL, state_after = NULL WHERE platform = ?"
    " AND target = ? AND kind = 'moderation.refused'"
)
SQL_RENAME_AUDIT: Final = (
    "UPDATE audit_log SET actor_id = CASE WHEN actor_id = ? THEN ? ELSE actor_id END,"
    " target = CASE WHEN target = ? THEN ? ELSE target END,"
    " state_before = CAST(REPLACE(CAST(state_before AS TEXT), ?, ?) AS $json),"
    " state_after = CAST(REPLACE(CAST(state_after AS TEXT), ?, ?) AS $json)"
    f" WHERE {_AUDIT_NAMING}"
)
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

    async def kept(self, platform: str, user_id: str) -> dict[str, int]:
        """What the store keeps about ``user_id`` on ``platform``, by kind: ``conversations``
        (they started) and their ``messages``, ``jobs`` (of which ``results`` posted and
        ``running`` unfinished), ``settings`` (0 or 1), ``usage_days``, ``moderation_days``,
        ``banned_until`` (Unix seconds, 0: never banned) and ``audit_entries`` by or about
        them."""
        pairs = (platform, user_id) * 9
        named = (platform, user_id, user_id, *(json_string_inside(user_id),) * 2)
        row = await self.db.fetch_one(SQL_KEPT, (*pairs, *named))
        assert row is not None
        return {name: int(value or 0) for name, value in row.items()}

    async def forget(self, platform: str, user_id: str) -> tuple[dict[str, int], str]:
        """Delete what the store keeps about ``user_id`` on ``platform`` (see :data:`ERASED`),
        in one transaction; unfinished jobs stay (they are still being made). What went, by
        kind, and the pseudonym the records that stay name instead."""
        pseudonym = new_pseudonym()
        json_type = TYPES[self.db.dialect.name]["json"]

        named = (platform, user_id, user_id, *(json_string_inside(user_id),) * 2)

        async def work(tx: Session) -> dict[str, int]:
            them = (platform, user_id)
            jobs = [str(row["id"]) for row in await tx.fetch_all(SQL_THEIR_JOBS, them)]
            gone = {"jobs": await _delete_jobs(tx, jobs)}
            gone["conversations"] = await tx.execute(SQL_FORGET_CONVERSATIONS, them)
            gone["feedback"] = await tx.execute(SQL_FORGET_FEEDBACK, them)
            await tx.execute(SQL_FORGET_ASKED, (user_id, platform))
            await tx.execute(SQL_FOLD_USAGE, them)
            gone["usage"] = await tx.execute(SQL_FORGET_USAGE, them)
            gone["settings"] = await tx.execute(SQL_FORGET_SETTINGS, them)
            gone["moderation"] = await tx.execute(SQL_FORGET_OFFENCES, them)
            gone["uploads"] = await tx.execute(SQL_FORGET_HOSTED, (f"{platform}:{user_id}",))
            gone["saved_options"] = await tx.execute(SQL_FORGET_SAVED_OPTIONS, them)
            gone["batches"] = await tx.execute(SQL_FORGET_BATCHES, them)
            if platform == "slack":
                await tx.execute(SQL_FORGET_IN_VIEW, (user_id,))
            await tx.execute(SQL_RENAME_RULES, (pseudonym, *them))
            await tx.execute(SQL_DROP_REFUSED, them)
            quoted = (f'"{user_id}"', f'"{pseudonym}"')
            rename = SQL_RENAME_AUDIT.replace("$json", json_type)
            gone["audit_entries"] = await tx.execute(
                rename,
                (user_id, pseudonym, user_id, pseudonym, *quoted, *quoted, *named),
            )
            return gone

        return await self.db.transaction(work), pseudonym

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


async def _delete_jobs(tx: Session, ids: list[str]) -> int:
    """Delete the jobs ``ids`` (their message links go with them); the jobs made from them
    (an upscale of a grid) stay, without the link to their parent."""
    deleted = 0
    for start in range(0, len(ids), PURGE_BATCH):
        chunk = ids[start : start + PURGE_BATCH]
        await tx.execute(SQL_UNLINK_CHILDREN.format(marks(len(chunk))), chunk)
        deleted += await tx.execute(SQL_DELETE_JOBS.format(marks(len(chunk))), chunk)
    return deleted
