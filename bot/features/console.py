"""The admin page's core (:class:`bot.kernel.AdminConsole`): what the playground's ``/admin``
shows of one workspace and what it changes there, read from and written to the same storage as
everything else, through the same code as the chat commands.

Who may: genbot admins of the playground (``User.is_admin``, from ``[web] admin_ids`` or the
demo's admin link) are the deployment's operators, as ``admin_ids`` are on every platform
(moderation's bans are per platform user, not per workspace): they may open any workspace of a
platform this genbot serves. :meth:`Console._allowed` is the one check, made by every call for
the workspace it names (a job's own workspace for a cancel), whatever the page showed. A job is
also a ref, resolved through :class:`bot.refs.Refs` like every other (from its workspace, in
none of its channels): an admin acts on a job made in a DM only in that DM, so the page neither
lists nor cancels one.

- **keys**: the provider keys' health (:class:`bot.features.provider_keys.ProviderKeys`: each
  key's state in this process, its jobs and credits today from the shared store);
- **queue**: the workspace's unfinished jobs in its channels (state, owner process, age,
  requester, prompt) and how many more are in direct messages (counted, nothing of them shown:
  their prompts are private), and a cancel through :meth:`bot.features.jobs.JobCancel.cancel`
  (the ❌ Cancel button's code, recorded in the audit log when the admin did not start the job,
  and told to its requester where its progress was shown);
- **moderation**: the platform's running bans and the workspace's rules, changed through
  :meth:`bot.features.moderation.ModerationAdmin.perform` (``/admin moderation``'s code,
  recorded in the audit log);
- **tiers**: the configured tiers (``[[quotas.tiers]]``, :class:`bot.features.jobs.Tiers`) with
  their limits and who is in which by configuration — the platform's users and roles (who
  holds a role is the platform's to say);
- **audit**: the workspace's log, filtered and paged like ``/admin audit``, and its export;
- **cluster**: the processes with their platforms, shards and leases, and the unfinished jobs by
  state and owner (:func:`storage.inspection.inspect_database`, what ``genbot status`` reads).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Final

from bot.features.audit.command import (
    AuditFilters,
    audit_filters,
    entries_page,
    entry_line,
    export_record,
    exported,
)
from bot.features.jobs import JobCancel, Tiers
from bot.features.jobs.messages import place_of
from bot.features.moderation import ModerationAdmin
from bot.features.moderation.rules import rule_problem
from bot.features.moderation.screen import global_rules
from bot.features.provider_keys import ProviderKeys
from bot.kernel import N_, NotAllowed, OptionValue, Place, User, UserError, _
from bot.refs import RefRefused, Refs
from storage import AuditLog, Job, JobReader, JobTracking, ModerationStore
from storage.inspection import inspect_database
from storage.sql.session import Database

WORKSPACE_ID: Final = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
QUEUE_READ: Final = 500
"""The most unfinished jobs read for one page (the oldest first)."""
AUDIT_PAGE: Final = 25
NOT_AN_ADMIN: Final = N_("Only genbot admins may use the admin page.")
NO_SUCH_JOB: Final = N_("There is no such job.")


@dataclass(frozen=True)
class ConsoleStorage:
    """What the admin page reads."""

    moderation: ModerationStore
    audit: AuditLog
    tracking: JobTracking
    jobs: JobReader
    db: Database


class Console:
    """The admin page's core (see the module docstring). ``refs`` resolves the jobs it names;
    ``clock`` is the store's (``store.clock``): jobs' ages and the processes' stamps are
    judged, and an export dated, on it."""

    def __init__(
        self,
        storage: ConsoleStorage,
        moderation: ModerationAdmin,
        cancel: JobCancel,
        refs: Refs,
        *,
        platforms: Callable[[], Sequence[str]],
        keys: ProviderKeys,
        tiers: Tiers,
        lease_seconds: float,
        clock: Callable[[], float],
    ) -> None:
        self.storage = storage
        self.moderation = moderation
        self.cancel_button = cancel
        self.refs = refs
        self.platforms = platforms
        self.keys = keys
        self.tiers = tiers
        self.lease_seconds = lease_seconds
        self.clock = clock

    @staticmethod
    def _admin(user: User) -> None:
        if not user.is_admin:
            raise NotAllowed(_(NOT_AN_ADMIN))

    def _allowed(self, user: User, platform: str, workspace_id: str) -> Place:
        """The one check (see the module docstring): the place the admin acts in."""
        self._admin(user)
        if platform not in self.platforms():
            raise UserError(_("genbot does not serve {platform} here.", platform=repr(platform)))
        if not WORKSPACE_ID.fullmatch(workspace_id):
            raise UserError(_("Name a workspace (its id: letters, digits, _ . : -)."))
        return Place(platform, workspace_id, "")

    async def overview(
        self, user: User, platform: str, workspace_id: str, filters: Mapping[str, str]
    ) -> dict[str, Any]:
        """Every section of the page for one workspace (JSON values); with no workspace named,
        only the platforms to choose from."""
        if not workspace_id:
            self._admin(user)
            return {"platforms": list(self.platforms()), "platform": platform, "workspace_id": ""}
        place = self._allowed(user, platform, workspace_id)
        return {
            "platform": platform,
            "workspace_id": workspace_id,
            "platforms": list(self.platforms()),
            "keys": [asdict(key) for key in await self.keys.health()],
            "queue": await self._queue(place),
            "moderation": await self._moderation(place),
            "tiers": self._tiers(platform),
            "audit": await self._audit(place, filters),
            "cluster": await self._cluster(),
        }

    async def moderate(
        self, user: User, platform: str, workspace_id: str, options: Mapping[str, OptionValue]
    ) -> str:
        """``/admin moderation``'s code, acting in that workspace."""
        place = self._allowed(user, platform, workspace_id)
        return await self.moderation.perform(user, place, options)

    async def cancel(self, user: User, job_id: str) -> str:
        """The ❌ Cancel button's code, for a job of a workspace the admin may open that
        :class:`~bot.refs.Refs` lets them act on from there (none made in a DM); any other
        job is "no such job", whether or not it exists."""
        self._admin(user)
        named = await self.storage.jobs.get_job(job_id) if len(job_id) <= 64 else None
        if named is None:
            raise UserError(_(NO_SUCH_JOB))
        try:
            job = await self.refs.job_in_workspace(user, _workspace_of(named), job_id)
        except RefRefused:
            raise UserError(_(NO_SUCH_JOB)) from None
        self._allowed(user, job.platform, job.workspace_id)
        await self.cancel_button.cancel(user, job, place_of(job))
        if job.status == "unknown":
            return _cancelled_unconfirmed(job, mine=user.id == job.requester_id)
        if user.id == job.requester_id:
            return _(
                "Cancelled {job}: its progress message is removed. The service still runs it"
                " and charges you, and it counts toward your cap until it ends.",
                job=job.id,
            )
        return _(
            "Cancelled {job}: its progress message now tells its requester so. The service"
            " still runs it and charges them, and it counts toward their cap until it ends.",
            job=job.id,
        )

    async def export(
        self, user: User, platform: str, workspace_id: str, filters: Mapping[str, str]
    ) -> tuple[str, bytes]:
        """The workspace's matching audit entries as JSON lines."""
        self._allowed(user, platform, workspace_id)
        who, kind, days = audit_filters(_options(filters))
        data, _count = await exported(self.storage.audit, platform, workspace_id, who, kind, days)
        stamp = datetime.fromtimestamp(self.clock(), UTC).strftime("%Y%m%d-%H%M")
        return f"genbot-audit-{platform}-{workspace_id}-{stamp}.jsonl", data

    async def _queue(self, place: Place) -> dict[str, Any]:
        now = self.clock()
        jobs = await self.storage.tracking.list_unfinished_jobs(limit=QUEUE_READ)
        mine = [
            job
            for job in jobs
            if job.platform == place.platform and job.workspace_id == place.workspace_id
        ]
        return {
            "direct_messages": sum(job.is_dm for job in mine),
            "jobs": [
                {
                    "id": job.id,
                    "status": job.status,
                    "owner": job.owner,
                    "age_seconds": round(now - job.created_at),
                    "requester_id": job.requester_id,
                    "channel_id": job.channel_id,
                    "prompt": job.prompt[:120],
                }
                for job in mine
                if not job.is_dm
            ],
            "read": len(jobs),
        }

    async def _moderation(self, place: Place) -> dict[str, Any]:
        store = self.storage.moderation
        rules = await store.rules(place.platform, place.workspace_id)
        return {
            "bans": [
                {"user_id": user_id, "until": until}
                for user_id, until in await store.bans(place.platform)
            ],
            "rules": [{**asdict(rule), "inactive": rule_problem(rule)} for rule in rules],
            "global_rules": len(global_rules(self.moderation.settings)),
        }

    def _tiers(self, platform: str) -> dict[str, Any]:
        prefix = f"{platform}:"
        return {
            "configured": self.tiers.configured,
            "tiers": [
                {
                    "name": members.tier.name,
                    "default": members.default,
                    "limits": members.tier.model_dump(exclude={"name", "users", "roles"}),
                    "users": [
                        u.removeprefix(prefix) for u in members.users if u.startswith(prefix)
                    ],
                    "roles": [
                        r.removeprefix(prefix) for r in members.roles if r.startswith(prefix)
                    ],
                }
                for members in self.tiers.members()
            ],
        }

    async def _audit(self, place: Place, filters: Mapping[str, str]) -> dict[str, Any]:
        who, kind, days = audit_filters(_options(filters))
        given = (filters.get("page") or "1").strip()
        page = int(given) if given.isdigit() and int(given) > 0 else 1
        chosen = AuditFilters(who, kind, days)
        found, older = await entries_page(self.storage.audit, place, chosen, page, AUDIT_PAGE)
        return {
            "page": page,
            "more": older,
            "entries": [{"line": entry_line(e), "entry": export_record(e)} for e in found],
        }

    async def _cluster(self) -> dict[str, Any]:
        db = self.storage.db
        found = await inspect_database(db, db.dialect.name, self.lease_seconds, self.clock())
        return {
            "schema_version": found.schema_version,
            "processes": [asdict(process) for process in found.processes],
            "jobs": [
                {"status": status, "owner": owner, "count": count}
                for status, owner, count in found.jobs
            ],
        }


def _cancelled_unconfirmed(job: Job, *, mine: bool) -> str:
    """What the admin who cancelled ``job``, which the provider never confirmed, is told: it
    no longer counts toward any cap, though the provider may still charge it."""
    if mine:
        return _(
            "Cancelled {job}: its progress message is removed. The service never confirmed it,"
            " so it no longer counts toward your cap; if the service did run it, it may still"
            " charge you.",
            job=job.id,
        )
    return _(
        "Cancelled {job}: its progress message now tells its requester so. The service never"
        " confirmed it, so it no longer counts toward their cap; if the service did run it, it"
        " may still charge them.",
        job=job.id,
    )


def _workspace_of(job: Job) -> Place:
    """Where the admin page acts on ``job``: its workspace, in none of its channels."""
    return Place(job.platform, job.workspace_id, "")


def _options(filters: Mapping[str, str]) -> dict[str, OptionValue]:
    """The page's audit filters as ``/admin audit``'s options (``days`` a number)."""
    options: dict[str, OptionValue] = {
        name: filters[name].strip() for name in ("user", "kind") if filters.get(name)
    }
    days = (filters.get("days") or "").strip()
    if days:
        if not days.isdigit() or not 1 <= int(days) <= 3650:
            raise UserError(_("days must be a whole number from 1 to 3650."))
        options["days"] = int(days)
    return options
