"""Where every admin action, moderation refusal and ban is recorded: :class:`AuditTrail`.

Each is recorded once, where it is performed (the features call :meth:`AuditTrail.record` right
after the change, before they answer), in the shared store (:class:`storage.AuditLog`), and
logged as one line with ``event=audit`` (its fields in the JSON log format). :data:`KINDS` is
the list of what is recorded; ``tests/bot/features/audit/test_coverage.py`` holds every admin
check of the code to it. The trail also purges entries older than ``[storage.keep_days]
audit`` when the retention purge asks (one process per hour does, :meth:`storage.AuditLog.purge`).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final

from bot.kernel import Place
from storage import AuditEntry, AuditLog

log = logging.getLogger("genbot.audit")

GENBOT: Final = "genbot"
"""The actor of what genbot does by itself (a ban earned by offences)."""
KINDS: Final[dict[str, str]] = {
    "settings.changed": "a channel's or the workspace's defaults (admins), or a channel's system "
    "prompt (anyone in the channel)",
    "moderation.rule_added": "a word or pattern added to the workspace's rules",
    "moderation.rule_removed": "a word or pattern removed from the workspace's rules",
    "moderation.unbanned": "a running ban lifted by an admin",
    "moderation.banned": "a ban set: earned by an offence (by genbot) or by an admin",
    "moderation.refused": "a prompt, form or chat message refused by a rule or for a ban",
    "job.cancelled": "a job cancelled by an admin who did not start it",
    "user.forgotten": "a user's data deleted by an admin (/forget-me <user>); the target is the "
    "pseudonym the records that stay name instead",
}
"""Every kind of entry and what it records."""
UNLOGGED: Final = frozenset({"text"})
"""State fields kept in the database but left out of the log line (what a user wrote)."""


class AuditTrail:
    """Records entries in the store and the log, and purges old ones (when the retention
    purge asks, :class:`bot.features.retention.RetentionPurge`)."""

    def __init__(self, store: AuditLog, keep_days: float) -> None:
        self.store = store
        self.keep_days = keep_days

    async def record(
        self,
        kind: str,
        place: Place,
        actor_id: str,
        target: str,
        *,
        before: Any = None,
        after: Any = None,
    ) -> AuditEntry:
        """Record that ``actor_id`` did ``kind`` to ``target`` in ``place``, with the state
        ``before`` and ``after`` (JSON values); the entry as stored."""
        if kind not in KINDS:
            raise ValueError(f"{kind!r} is not a kind of audit entry")
        entry = await self.store.record(
            AuditEntry(
                kind,
                place.platform,
                place.workspace_id,
                place.channel_id,
                actor_id,
                target,
                before,
                after,
            )
        )
        log.info(
            "audit: %s by %s on %s",
            kind,
            actor_id,
            target,
            extra={"event": "audit", "fields": log_fields(entry)},
        )
        return entry

    async def purge(self) -> int | None:
        """One purge of entries older than ``keep_days`` (None: another process's turn)."""
        purged = await self.store.purge(self.keep_days)
        if purged:
            log.info("purged %d audit entries older than %g days", purged, self.keep_days)
        return purged


def entry_fields(entry: AuditEntry) -> dict[str, Any]:
    """What an entry says, beside its id and time (the export's and the log line's fields)."""
    return {
        "kind": entry.kind,
        "platform": entry.platform,
        "workspace_id": entry.workspace_id,
        "channel_id": entry.channel_id,
        "actor_id": entry.actor_id,
        "target": entry.target,
        "before": entry.before,
        "after": entry.after,
    }


def log_fields(entry: AuditEntry) -> dict[str, str]:
    """An entry as the fields of its JSON log line: the states as JSON text (so that they are
    redacted like any text), without a refused text (:data:`UNLOGGED`: the database keeps it for
    admins; logs never show what users wrote)."""
    fields = {"audit_id": str(entry.id), "at": str(entry.at)}
    for name, value in entry_fields(entry).items():
        shown = value if name not in ("before", "after") else _json(_unlogged(value))
        fields[name] = str(shown)
    return fields


def _unlogged(state: Any) -> Any:
    if not isinstance(state, dict):
        return state
    return {name: value for name, value in state.items() if name not in UNLOGGED}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
