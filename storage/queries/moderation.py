"""Moderation's shared state: each workspace's rules, and offences per user per UTC day with the
bans they earned or an admin set, so that every process refuses the same prompts and the same
users.

A day's row holds its ban's end and who set it (``banned_by_admin``): the ban that raised the
end last. An admin's ban takes the row over when it ends later than the running one; an offence
whose ban does, makes it the rules' again (also after an unban). A user's running ban is the
row ending last. Which admin banned is the audit log's to say (``moderation.banned``): the row
names nobody but its user. A user's refused prompts of the day that ``/forget-me`` kept under
:func:`~storage.queries.retention.erased_name` count with theirs toward their next ban: deleting
one's data does not start the day's bans over."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from storage.queries.base import Clock
from storage.queries.retention import erased_name
from storage.records.moderation import Ban, ModerationRule, Offence
from storage.records.usage import utc_day
from storage.sql.session import Database

SQL_ADD_RULE: Final = (
    "INSERT INTO moderation_rules (platform, workspace_id, entry, is_pattern, category,"
    " added_by, added_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
SQL_REMOVE_RULE: Final = (
    "DELETE FROM moderation_rules WHERE platform = ? AND workspace_id = ? AND entry = ?"
)
SQL_RULES: Final = (
    "SELECT entry, is_pattern, category FROM moderation_rules"
    " WHERE platform = ? AND workspace_id = ? ORDER BY category, entry"
)
SQL_COUNT_OFFENCE: Final = (
    "INSERT INTO moderation_offences (platform, user_id, day, offences, banned_until)"
    " VALUES (?, ?, ?, 1, 0) ON CONFLICT (platform, user_id, day)"
    " DO UPDATE SET offences = moderation_offences.offences + 1 RETURNING offences"
)
SQL_KEPT_OFFENCES: Final = (
    "SELECT offences FROM moderation_offences WHERE platform = ? AND user_id = ? AND day = ?"
)
SQL_BAN: Final = (
    "UPDATE moderation_offences SET banned_until = ?, banned_by_admin = ? WHERE platform = ?"
    " AND user_id = ? AND day = ? AND banned_until < ?"
)
SQL_LIFT_BAN: Final = (
    "UPDATE moderation_offences SET banned_until = ? WHERE platform = ? AND user_id = ?"
    " AND banned_until > ?"
)
SQL_SET_BAN: Final = (
    "INSERT INTO moderation_offences (platform, user_id, day, offences, banned_until,"
    " banned_by_admin) VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT (platform, user_id, day) DO UPDATE"
    " SET banned_until = excluded.banned_until, banned_by_admin = excluded.banned_by_admin"
    " WHERE moderation_offences.banned_until < excluded.banned_until"
)
SQL_BANS: Final = (
    "SELECT user_id, MAX(banned_until) AS until FROM moderation_offences"
    " WHERE platform = ? AND banned_until > ? GROUP BY user_id ORDER BY user_id"
)
SQL_BANNED_UNTIL: Final = (
    "SELECT MAX(banned_until) AS until FROM moderation_offences"
    " WHERE platform = ? AND user_id = ? AND banned_until > ?"
)
SQL_RUNNING_BAN: Final = (
    "SELECT banned_until, banned_by_admin FROM moderation_offences"
    " WHERE platform = ? AND user_id = ? AND banned_until > ?"
    " ORDER BY banned_until DESC LIMIT 1"
)

SQL_SEEN: Final = (
    "SELECT 1 AS seen WHERE EXISTS (SELECT 1 FROM jobs WHERE platform = ? AND requester_id = ?"
    " AND workspace_id = ?) OR EXISTS (SELECT 1 FROM conversations WHERE platform = ? AND"
    " created_by = ? AND workspace_id = ?) OR EXISTS (SELECT 1 FROM messages AS m JOIN"
    " conversations AS c ON c.id = m.conversation_id WHERE c.platform = ? AND m.author = ? AND"
    " c.workspace_id = ?) OR EXISTS (SELECT 1 FROM audit_log WHERE platform = ? AND (actor_id ="
    " ? OR target = ?) AND workspace_id = ?) OR EXISTS (SELECT 1 FROM moderation_offences WHERE"
    " platform = ? AND user_id = ?) OR EXISTS (SELECT 1 FROM scope_settings WHERE platform = ?"
    " AND kind = 'user' AND scope_id = ?) OR EXISTS (SELECT 1 FROM saved_options WHERE"
    " platform = ? AND user_id = ?) OR EXISTS (SELECT 1 FROM usage WHERE platform = ? AND"
    " user_id = ?)"
)
"""A user genbot has seen in a workspace: their jobs, conversations or turns and the audit
entries by or about them there, or what it keeps of them with no workspace (their offences and
bans, own settings, saved options, usage) on the platform."""


@dataclass
class ModerationStore:
    """Workspace rules, offences and bans on one database (either backend)."""

    db: Database
    clock: Clock

    async def add_rule(
        self, platform: str, workspace_id: str, rule: ModerationRule, added_by: str
    ) -> bool:
        """Add ``rule`` to the workspace's list; False when its entry is already there."""
        values = (platform, workspace_id, rule.entry, rule.pattern, rule.category)
        return await self.db.execute(SQL_ADD_RULE, (*values, added_by, self.clock())) == 1

    async def remove_rule(self, platform: str, workspace_id: str, entry: str) -> bool:
        """Remove the workspace's rule(s) for ``entry`` (word or pattern); False when none."""
        return await self.db.execute(SQL_REMOVE_RULE, (platform, workspace_id, entry)) > 0

    async def rules(self, platform: str, workspace_id: str) -> list[ModerationRule]:
        """The workspace's rules, by category."""
        rows = await self.db.fetch_all(SQL_RULES, (platform, workspace_id))
        return [ModerationRule(r["category"], r["entry"], bool(r["is_pattern"])) for r in rows]

    async def record_offence(
        self, platform: str, user_id: str, ban_minutes: Sequence[int]
    ) -> Offence:
        """Count an offence of ``user_id`` today and ban them for ``ban_minutes[n - 1]`` minutes
        for their n-th (the last for any after; those kept since they deleted their data
        count); a longer ban already running is kept."""
        now = self.clock()
        day = utc_day(now)
        row = await self.db.fetch_one(SQL_COUNT_OFFENCE, (platform, user_id, day))
        kept = await self.db.fetch_one(
            SQL_KEPT_OFFENCES, (platform, erased_name(platform, user_id), day)
        )
        count = int(row["offences"]) if row is not None else 1
        count += int(kept["offences"]) if kept is not None else 0
        minutes = ban_minutes[min(count, len(ban_minutes)) - 1] if ban_minutes else 0
        until = now + 60.0 * minutes
        await self.db.execute(SQL_BAN, (until, False, platform, user_id, day, until))
        return Offence(count, max(until, await self.banned_until(platform, user_id) or 0.0))

    async def banned_until(self, platform: str, user_id: str) -> float | None:
        """When ``user_id``'s running ban ends, or None when they are not banned."""
        row = await self.db.fetch_one(SQL_BANNED_UNTIL, (platform, user_id, self.clock()))
        until = row["until"] if row is not None else None
        return float(until) if until is not None else None

    async def running_ban(self, platform: str, user_id: str) -> Ban | None:
        """``user_id``'s running ban (when it ends, and whether an admin set it), or None when
        they are not banned."""
        row = await self.db.fetch_one(SQL_RUNNING_BAN, (platform, user_id, self.clock()))
        if row is None:
            return None
        return Ban(float(row["banned_until"]), bool(row["banned_by_admin"]))

    async def ban(self, platform: str, user_id: str, minutes: float) -> float:
        """Ban ``user_id`` for ``minutes`` from now (an admin's ban: no offence is counted, and
        :meth:`running_ban` says an admin set it; a longer ban already running is kept); when
        the ban now ends."""
        now = self.clock()
        until = now + 60.0 * minutes
        await self.db.execute(SQL_SET_BAN, (platform, user_id, utc_day(now), until, True))
        return max(until, await self.banned_until(platform, user_id) or 0.0)

    async def bans(self, platform: str) -> list[tuple[str, float]]:
        """The users of ``platform`` banned now, with when each ban ends, by user id."""
        rows = await self.db.fetch_all(SQL_BANS, (platform, self.clock()))
        return [(str(row["user_id"]), float(row["until"])) for row in rows]

    async def lift_ban(self, platform: str, user_id: str) -> bool:
        """End ``user_id``'s running ban now (the day's offences still count); False when they
        were not banned."""
        now = self.clock()
        return await self.db.execute(SQL_LIFT_BAN, (now, platform, user_id, now)) > 0

    async def has_seen(self, platform: str, workspace_id: str, user_id: str) -> bool:
        """Whether genbot has seen ``user_id`` in the workspace (:data:`SQL_SEEN`): so that a
        ban by a typed id bans someone."""
        ids, theirs = (platform, user_id, workspace_id), (platform, user_id)
        values = (*ids, *ids, *ids, platform, user_id, user_id, workspace_id, *theirs * 4)
        return await self.db.fetch_one(SQL_SEEN, values) is not None
