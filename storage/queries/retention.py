"""Retention: what genbot keeps about one user and forgetting it (``/forget-me``), and purging
what is older than its kind's ``keep_days`` (and the processes gone for a day), by one process of
the cluster at a time.

:data:`storage.queries.user_data.USER_DATA` is the one list of the kinds of a user's data: how
each is counted (the preview) and how it goes (the deletion). :data:`ERASED` lists, table by
table, how a user's rows go; :data:`NAMES_NO_USER` the tables that name none
(``tests/storage/test_retention.py`` holds every table of the schema to one of the two, and
searches every table of both backends for a forgotten user's id). The playground's tables are
counted and erased by its adapter, which also drops what it shows
(:meth:`storage.PlaygroundHistory.about_user` and ``forget_user``)."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Final

from storage.queries.base import Clock
from storage.queries.playground import FORGOTTEN_MARK_SECONDS, SQL_DROP_FORGOTTEN_MARKS, mark_time
from storage.queries.user_data import IS_DONE, SQL_BANNED_UNTIL, SQL_RUNNING, USER_DATA, Whose
from storage.records.retention import Cutoffs, KeptAbout, Purged
from storage.records.usage import still_counting, utc_day
from storage.sql.dialect import marks
from storage.sql.schema import TYPES
from storage.sql.session import Database, Session

ERASED: Final[dict[str, str]] = {
    "conversations": "the conversations they started (created_by), deleted",
    "messages": (
        "deleted with their conversation; their turns in others' and answers to them there keep"
        " no id (author, asked_by)"
    ),
    "chat_feedback": "their ratings of answers, deleted",
    "conversation_links": "deleted with their conversation",
    "jobs": (
        "their finished jobs (requester_id), deleted; other jobs made from them lose the link;"
        " their unfinished ones are renamed (erased_name: derived, so they still count under"
        " the user's cap), and are erased instead of delivered (unless being delivered already)"
    ),
    "job_messages": "deleted with their job",
    "job_words": "SQLite's index of prompts, kept by the jobs' triggers",
    "usage": (
        "their rows folded into anonymous ones (user_id '') per platform, day and kind; those a"
        " budget's window may still count are renamed (erased_name) until the purge folds them"
    ),
    "scope_settings": "their own settings (kind user), deleted",
    "moderation_offences": (
        "their offences and bans, deleted; the day's refused prompts are kept renamed"
        " (erased_name, no ban) until the day ends"
    ),
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

SQL_UNLINK_CHILDREN: Final = "UPDATE jobs SET parent_job_id = NULL WHERE parent_job_id IN ({})"
SQL_DELETE_JOBS: Final = "DELETE FROM jobs WHERE id IN ({})"
SQL_CLAIM_PURGE: Final = "UPDATE purge_turns SET due_at = ? WHERE name = ? AND due_at <= ?"
SQL_OLD_CONVERSATIONS: Final = "SELECT id AS key FROM conversations WHERE updated_at < ? LIMIT ?"
SQL_DELETE_CONVERSATIONS: Final = "DELETE FROM conversations WHERE id IN ({})"
SQL_OLD_JOBS: Final = f"SELECT id AS key FROM jobs WHERE {IS_DONE} AND created_at < ? LIMIT ?"
SQL_OLD_IMAGES: Final = "SELECT key FROM playground_images WHERE created_at < ? LIMIT ?"
GONE_PROCESS_SECONDS: Final = 86400.0
"""A process not seen for this long (a day) is dropped from ``processes`` by the purge: one whose
heartbeat stopped without a clean stop (``kill -9``, a crash, a lost host; a clean stop drops its
row itself), and every restart on SQLite leaves one. Its jobs were taken over within two leases
and its accepted commands once it was silent for two, unless no live process runs an adapter of
their platform: those jobs stay owned by its id, and ``genbot status`` then shows an owner with no
process row. Every reader of ``processes`` takes a missing row for a gone process, so they are
still taken over when such a process comes. A day is far past any stall a process could come
back from (its row would be written again by its next heartbeat or claim anyway)."""
SQL_FORGET_GONE_PROCESSES: Final = "DELETE FROM processes WHERE seen_at < ?"
SQL_FORGET_GONE_PROBES: Final = "DELETE FROM storage_probes WHERE probed_at < ?"
"""The write probes (:meth:`storage.Store.probe_write`: one row per process) not written for
:data:`GONE_PROCESS_SECONDS`, forgotten with the processes: every process that ever answered a
readiness check left one."""
SQL_DELETE_IMAGES: Final = "DELETE FROM playground_images WHERE key IN ({})"
_ERASED_NAME: Final = "user_id LIKE 'erased-________'"
"""A row kept under :func:`erased_name` (or, in no table that this reads, a pseudonym)."""
_SPENT_PAST: Final = (
    f"{_ERASED_NAME} AND created_at < ? AND (job_id IS NULL OR job_id NOT IN (SELECT id FROM jobs))"
)
"""Usage ``/forget-me`` kept that no budget's window counts any more (the charges of jobs still
there stay linked to them, so that a job is charged once)."""
SQL_FOLD_SPENT: Final = (
    "INSERT INTO usage (platform, user_id, day, kind, job_id, tokens_prompt, tokens_completion,"
    " credits, created_at) SELECT platform, '', day, kind, NULL, SUM(tokens_prompt),"
    " SUM(tokens_completion), SUM(credits), MIN(created_at) FROM usage"
    f" WHERE {_SPENT_PAST} GROUP BY platform, day, kind"
)
SQL_DROP_SPENT: Final = f"DELETE FROM usage WHERE {_SPENT_PAST}"
SQL_DROP_OFFENCES: Final = f"DELETE FROM moderation_offences WHERE {_ERASED_NAME} AND day < ?"
SQL_ANSWERING: Final = (
    "SELECT conversation_id, id FROM messages WHERE role = 'assistant' AND asked_by = ?"
    " AND (state = 'streaming' OR (state IS NULL AND COALESCE(content, '') = ''))"
    " AND conversation_id IN (SELECT id FROM conversations WHERE platform = ?) ORDER BY id"
)
"""The answers to a user still being written: streaming, or stored empty as they begin."""


PSEUDONYM: Final = re.compile(r"erased-[0-9a-f]{8}")


def new_pseudonym() -> str:
    """What a forgotten user is called where a record must stay (``erased-3fa2c1d0``): random,
    so it leads back to nobody, and the same in every record of one forgetting."""
    return "erased-" + secrets.token_hex(4)


def erased_name(platform: str, user_id: str) -> str:
    """The name a forgotten user's unfinished jobs, and what still counts against their limits,
    are kept under (``erased-`` and the first 8 hex digits of the SHA-256 of ``<platform>:<user
    id>``): derived, not random, so that deleting one's data resets no limit. Their unfinished
    jobs still count under their cap of jobs at once (:class:`storage.JobAdmission`) until they
    end; the usage a budget's window may still count
    (:func:`~storage.records.usage.still_counting`: today's, and the last 24 hours' for hourly
    refills) still counts against their budgets (:class:`storage.UsageLedger`) until the purge
    folds it into anonymous totals; the day's
    refused prompts still count toward their next ban (:class:`storage.ModerationStore`) until
    the purge drops them the next day. Anyone who knows the id can derive it, so it names
    nothing else, and nothing that stays: the audit log and moderation rules name the random
    :func:`new_pseudonym`."""
    digest = hashlib.sha256(f"{platform}:{user_id}".encode()).hexdigest()
    return "erased-" + digest[:8]


def forgotten(user_id: str) -> bool:
    """Whether ``user_id`` is a name a forgotten user's records go by (:func:`new_pseudonym`,
    :func:`erased_name`): a job naming one as its requester ran for a user who was forgotten
    meanwhile, and is erased instead of delivered."""
    return PSEUDONYM.fullmatch(user_id) is not None


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

    async def answering(self, platform: str, user_id: str) -> list[tuple[int, int]]:
        """The answers to ``user_id`` on ``platform`` still being written, as (conversation,
        turn) pairs: what ``/forget-me`` stops before it erases."""
        rows = await self.db.fetch_all(SQL_ANSWERING, (user_id, platform))
        return [(int(row["conversation_id"]), int(row["id"])) for row in rows]

    async def forget(self, platform: str, user_id: str) -> tuple[dict[str, int], str]:
        """Erase what the store keeps about ``user_id`` on ``platform``, kind by kind of
        :data:`USER_DATA` (see :data:`ERASED`), in one transaction; unfinished jobs stay (they
        are still being made), renamed :func:`erased_name`: they are erased when they finish
        (:meth:`storage.DeliveryClaims.erase`). So do the usage a budget's window may still
        count and the day's refused prompts, renamed likewise, until :meth:`purge`. How many of
        each kind went (counted in the transaction, as :meth:`kept` counts them), and the
        pseudonym the records that stay name instead."""
        erased = erased_name(platform, user_id)
        whose = Whose(platform, user_id, new_pseudonym(), erased, self.clock())
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
        """Delete, kind by kind, what is older than its cutoff, and the processes and the write
        probes not written for longer than :data:`GONE_PROCESS_SECONDS`, and what
        :meth:`forget` kept once it counts no more (:meth:`_fold_kept`), when this process is
        the one to purge this hour (None when another one is, or did): the turn is a
        conditional update of its due time, and the purge runs under the cluster's lock on it,
        so two never overlap."""
        now = self.clock()
        turn = (now + PURGE_EVERY, PURGE_TURN, now)
        if await self.db.execute(SQL_CLAIM_PURGE, turn, repeatable=True) != 1:
            return None
        async with self.db.lock("genbot retention purge", wait=PURGE_LOCK_WAIT, name="the purge"):
            await self._fold_kept(now)
            return Purged(
                conversations=await self._purge(
                    cutoffs.conversations, SQL_OLD_CONVERSATIONS, SQL_DELETE_CONVERSATIONS
                ),
                job_results=await self._purge(cutoffs.job_results, SQL_OLD_JOBS, None),
                images=await self._purge(cutoffs.images, SQL_OLD_IMAGES, SQL_DELETE_IMAGES),
                processes=await self._forget_gone(now - GONE_PROCESS_SECONDS),
            )

    async def _fold_kept(self, now: float) -> None:
        """Fold the usage ``/forget-me`` kept under :func:`erased_name` that no budget's window
        counts any more into anonymous totals, as it folds older usage, and drop the refused
        prompts it kept of a day that is over, and the playground's marks of its forgets older
        than :data:`~storage.queries.playground.FORGOTTEN_MARK_SECONDS`."""

        async def work(tx: Session) -> None:
            past = (still_counting(now),)
            await tx.execute(SQL_FOLD_SPENT, past)
            await tx.execute(SQL_DROP_SPENT, past)
            await tx.execute(SQL_DROP_OFFENCES, (utc_day(now),))
            marked_before = mark_time(now - FORGOTTEN_MARK_SECONDS)
            await tx.execute(SQL_DROP_FORGOTTEN_MARKS, (marked_before,))

        await self.db.transaction(work, repeatable=True)

    async def _forget_gone(self, unseen_since: float) -> int:
        """Delete the rows of the processes not seen since ``unseen_since`` and the write probes
        not written since; how many processes."""

        async def work(tx: Session) -> int:
            await tx.execute(SQL_FORGET_GONE_PROBES, (unseen_since,))
            return await tx.execute(SQL_FORGET_GONE_PROCESSES, (unseen_since,))

        return await self.db.transaction(work, repeatable=True)

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
