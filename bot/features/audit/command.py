"""``/admin audit``: a workspace's audit log for its admins, newest first, a page at a time,
filtered by user (who did it, or whom it was about), kind (``moderation.banned``) or family
(``moderation``) and days; ``--export``: every matching entry as a JSON-lines file handed to
the admin privately (on a surface that can, :class:`bot.kernel.SendsFilesPrivately`; elsewhere
the answer says where to download it). Every answer is private.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Final

from bot.features.audit.trail import KINDS, entry_fields
from bot.kernel import (
    N_,
    ButtonPress,
    Command,
    Mention,
    ModalSubmit,
    OptionValue,
    Place,
    SendsFilesPrivately,
    UserError,
    _,
    mentioned_user,
    named,
    ngettext,
    written,
)
from bot.outbox import Notice, Outbox, PrivateFile, WritePolicy
from bot.refs import Referent, RefKind, Work
from storage import AuditEntry, AuditLog

PAGE: Final = 15
EXPORT_MAX: Final = 50_000
"""The most entries one export holds (newest first)."""
ADMINS_ONLY: Final = N_("Only genbot admins can read a workspace's audit log.")
IN_A_CHANNEL: Final = N_(
    "The audit log belongs to a workspace: run {audit} in one of its channels."
)
NO_FILES_HERE: Final = N_(
    "This platform cannot hand you a file privately: download the export from the playground's "
    "admin page (/admin), or run /admin audit --export on Discord."
)


def families() -> list[str]:
    """The kinds' families (``moderation``, ``settings``…)."""
    return sorted({kind.split(".")[0] for kind in KINDS})


def audit_filters(options: Mapping[str, OptionValue]) -> tuple[str, str, float | None]:
    """The ``user``, ``kind`` and ``days`` options, checked."""
    given = str(options.get("user") or "").strip()
    user = mentioned_user(given) if given else ""
    if given and not user:
        raise UserError(_("Name one user: {example}.", example=written("admin.audit", "<@user>")))
    kind = str(options.get("kind") or "").strip().lower()
    if kind and kind not in KINDS and kind not in families():
        raise UserError(_("kind must be one of: {kinds}.", kinds=", ".join([*families(), *KINDS])))
    days = options.get("days")
    return user, kind, float(days) if isinstance(days, int | float) and days else None


@dataclass(frozen=True)
class AuditFilters:
    """Which entries: by or about ``user``, of ``kind`` (or family), of the last ``days``."""

    user: str = ""
    kind: str = ""
    days: float | None = None


async def entries_page(
    store: AuditLog, place: Place, filters: AuditFilters, page: int, size: int
) -> tuple[list[AuditEntry], bool]:
    """Page ``page`` (from 1) of ``size`` of the workspace's matching entries, newest first,
    and whether older ones follow."""
    found = await store.entries(
        place.platform,
        place.workspace_id,
        user=filters.user,
        kind=filters.kind,
        days=filters.days,
        limit=size + 1,
        offset=(page - 1) * size,
    )
    return found[:size], len(found) > size


def entry_line(entry: AuditEntry) -> str:
    """One entry as ``/admin audit`` shows it."""
    when = datetime.fromtimestamp(entry.at, UTC).strftime("%Y-%m-%d %H:%M")
    states = ""
    if entry.before is not None or entry.after is not None:
        states = f": {_compact(entry.before)} → {_compact(entry.after)}"
    fields = {"when": when, "kind": entry.kind, "actor": entry.actor_id, "states": states}
    # Translators: one line of /admin audit; {kind} is an entry's kind (settings.changed), kept
    # as is; {states} is empty or ": {before} → {after}" (JSON values).
    if entry.target and entry.channel_id:
        return _(
            "• {when} **{kind}** by `{actor}` `{target}` in {channel}{states}",
            target=entry.target,
            channel=Mention.channel(entry.channel_id),
            **fields,
        )
    if entry.target:
        return _(
            "• {when} **{kind}** by `{actor}` `{target}`{states}", target=entry.target, **fields
        )
    if entry.channel_id:
        return _(
            "• {when} **{kind}** by `{actor}` in {channel}{states}",
            channel=Mention.channel(entry.channel_id),
            **fields,
        )
    return _("• {when} **{kind}** by `{actor}`{states}", **fields)


def export_record(entry: AuditEntry) -> dict[str, Any]:
    """One entry as the export (and the admin page) gives it: its id, its time in ISO 8601
    UTC, and what it says."""
    stamp = datetime.fromtimestamp(entry.at, UTC).isoformat(timespec="seconds")
    return {"id": entry.id, "at": stamp.replace("+00:00", "Z"), **entry_fields(entry)}


def export_line(entry: AuditEntry) -> str:
    """One entry as a line of the JSON-lines export."""
    return json.dumps(export_record(entry), ensure_ascii=False, separators=(",", ":"))


def _compact(state: object) -> str:
    text = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= 120 else text[:119] + "…"


async def exported(
    store: AuditLog, platform: str, workspace_id: str, user: str, kind: str, days: float | None
) -> tuple[bytes, int]:
    """The JSON-lines export of a workspace's matching entries (newest first) and their
    count."""
    lines: list[str] = []
    while len(lines) < EXPORT_MAX:
        page = await store.entries(
            platform, workspace_id, user=user, kind=kind, days=days, limit=1000, offset=len(lines)
        )
        lines.extend(export_line(entry) for entry in page)
        if len(page) < 1000:
            break
    return "".join(f"{line}\n" for line in lines).encode(), len(lines)


class AuditAdmin:
    """The ``admin.audit`` command (see the module docstring)."""

    commands = frozenset({"admin.audit"})
    actions: ClassVar[Mapping[str, RefKind]] = {}
    work: ClassVar[Mapping[str, Work]] = {}

    def __init__(self, store: AuditLog, outbox: Outbox) -> None:
        self.store = store
        self.outbox = outbox

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """A page of the log, or its export; private."""
        if not event.user.is_admin:
            raise UserError(_(ADMINS_ONLY))
        if event.place.is_dm:
            raise UserError(_(IN_A_CHANNEL, audit=named("admin.audit")))
        user, kind, days = audit_filters(options)
        place = event.place
        if options.get("export") is True:
            await self._export(event, user, kind, days)
            return
        page = int(options.get("page") or 1)
        filters = AuditFilters(user, kind, days)
        entries, older = await entries_page(self.store, place, filters, page, PAGE)
        if not entries:
            text = (
                _("No audit entries match.")
                if page == 1
                else _("There is no page {page}.", page=page)
            )
        else:
            lines = "\n".join(entry_line(entry) for entry in entries)
            text = (
                _(
                    "Audit log, page {page} (newest first):\n{lines}\nOlder ones: {older}.",
                    page=page,
                    lines=lines,
                    older=written("admin.audit", f"… --page {page + 1}"),
                )
                if older
                else _("Audit log, page {page} (newest first):\n{lines}", page=page, lines=lines)
            )
        limit = self.outbox.profile(place.platform).max_text
        if len(text) > limit:
            text = text[: limit - 1] + "…"
        await self.outbox.write(place, Notice(event, text), WritePolicy.NOW)

    async def _export(self, event: Command, user: str, kind: str, days: float | None) -> None:
        place = event.place
        if not self.outbox.can(place.platform, SendsFilesPrivately):
            raise UserError(_(NO_FILES_HERE))
        data, count = await exported(
            self.store, place.platform, place.workspace_id, user, kind, days
        )
        stamp = datetime.fromtimestamp(self.store.clock(), UTC).strftime("%Y%m%d-%H%M")
        text = ngettext(
            "The audit log's {n} matching entry, newest first (JSON lines).",
            "The audit log's {n} matching entries, newest first (JSON lines).",
            count,
        )
        file = PrivateFile(event, text, f"genbot-audit-{stamp}.jsonl", data)
        await self.outbox.write(place, file, WritePolicy.NOW)

    async def on_button(self, event: ButtonPress, referent: Referent) -> None:
        """It has no buttons."""
        raise UserError(_("This button is no longer supported."))

    async def on_modal(self, event: ModalSubmit, referent: Referent) -> None:
        """It has no forms."""
        raise UserError(_("This form is no longer supported."))
