"""The one list of the kinds of a user's data (:data:`USER_DATA`): how ``/forget-me`` counts
each kind (its preview, and what its deletion reports) and how the deletion makes it go
(:class:`storage.Retention`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from storage.records.jobs import TERMINAL_STATUSES
from storage.records.usage import still_counting, utc_day
from storage.sql.dialect import json_string_inside

IS_DONE: Final = "status IN ({})".format(
    ", ".join(f"'{status}'" for status in sorted(TERMINAL_STATUSES))
)
"""A job's status is final (its row may go)."""
_AUDIT_NAMING: Final = (
    "platform = ? AND (actor_id = ? OR target = ? OR CAST(state_before AS TEXT) LIKE ? ESCAPE"
    " '\\' OR CAST(state_after AS TEXT) LIKE ? ESCAPE '\\')"
)
"""The audit entries by, about or mentioning a user (platform, the id twice, its pattern
twice: :func:`storage.sql.dialect.json_string_inside`)."""
_THEIR_CONVERSATIONS: Final = "SELECT id FROM conversations WHERE platform = ? AND created_by = ?"
_THEIR_DONE_JOBS: Final = (
    f"SELECT id FROM jobs WHERE platform = ? AND requester_id = ? AND {IS_DONE}"
)
_BEING_DELIVERED: Final = "('posting', 'reporting')"
"""A job claimed for delivery: its outcome is being shown under its requester's name now."""
SQL_RUNNING: Final = (
    f"SELECT COUNT(*) AS running FROM jobs WHERE platform = ? AND requester_id = ? AND NOT"
    f" {IS_DONE}"
)
SQL_BANNED_UNTIL: Final = (
    "SELECT MAX(banned_until) AS banned_until FROM moderation_offences WHERE platform = ?"
    " AND user_id = ?"
)


@dataclass(frozen=True)
class Whose:
    """Whose data a statement counts or erases, the pseudonym the records that stay name
    instead, the name their unfinished jobs, and what still counts against their limits, are
    kept under, and when the deletion runs (none while only counting)."""

    platform: str
    user_id: str
    pseudonym: str = ""
    erased: str = ""
    at: float = 0.0

    def spent_before(self) -> tuple[object, ...]:
        """Their usage that no budget's window counts any more."""
        return (*self.them(), still_counting(self.at))

    def spent_since(self) -> tuple[object, ...]:
        """Their usage that a budget's window may still count, kept under :attr:`erased`."""
        return (self.erased, *self.them(), still_counting(self.at))

    def offences_today(self) -> tuple[object, ...]:
        """Their refused prompts of the day, kept under :attr:`erased`."""
        return (self.erased, *self.them(), utc_day(self.at))

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


def _in_others(kind: str, column: str) -> UserData:
    """The turns naming the user in ``column`` in conversations others started (or nobody
    knows who started): they stay, naming nobody."""
    return UserData(
        kind,
        Statement(
            f"SELECT COUNT(*) FROM messages WHERE {column} = ? AND conversation_id IN (SELECT id"
            " FROM conversations WHERE platform = ? AND (created_by IS NULL OR created_by <> ?))",
            lambda whose: (whose.user_id, whose.platform, whose.user_id),
        ),
        (
            Statement(
                f"UPDATE messages SET {column} = NULL WHERE {column} = ? AND conversation_id IN"
                " (SELECT id FROM conversations WHERE platform = ?)",
                lambda whose: (whose.user_id, whose.platform),
            ),
        ),
    )


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
    _in_others("messages_in_others", "author"),
    _in_others("answers", "asked_by"),
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
            Statement(f"DELETE FROM jobs WHERE platform = ? AND requester_id = ? AND {IS_DONE}"),
            Statement(
                "UPDATE jobs SET requester_id = ? WHERE platform = ? AND requester_id = ? AND"
                f" NOT {IS_DONE} AND status NOT IN {_BEING_DELIVERED}",
                lambda whose: (whose.erased, whose.platform, whose.user_id),
            ),
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
                " FROM usage WHERE platform = ? AND user_id = ? AND created_at < ?"
                " GROUP BY platform, day, kind",
                Whose.spent_before,
            ),
            Statement(
                "UPDATE usage SET user_id = ?, job_id = CASE WHEN job_id IN (SELECT id FROM jobs)"
                " THEN job_id END WHERE platform = ? AND user_id = ? AND created_at >= ?",
                Whose.spent_since,
            ),
            Statement("DELETE FROM usage WHERE platform = ? AND user_id = ?"),
        ),
    ),
    UserData(
        "moderation_days",
        Statement("SELECT COUNT(*) FROM moderation_offences WHERE platform = ? AND user_id = ?"),
        (
            Statement(
                "INSERT INTO moderation_offences (platform, user_id, day, offences, banned_until)"
                " SELECT platform, ?, day, offences, 0 FROM moderation_offences WHERE platform = ?"
                " AND user_id = ? AND day = ? AND offences > 0 ON CONFLICT (platform, user_id, day)"
                " DO UPDATE SET offences = moderation_offences.offences + excluded.offences",
                Whose.offences_today,
            ),
            Statement("DELETE FROM moderation_offences WHERE platform = ? AND user_id = ?"),
        ),
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
