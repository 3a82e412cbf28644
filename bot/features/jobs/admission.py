"""Admission: which tier a user is in and whether they may start a new image or diffusion
job — the tiers with their caps and budgets (:class:`Tiers`) and a user's place among their jobs
(:class:`Admission`).

- Tiers (``[[quotas.tiers]]``): a tier's members are users (``"<platform>:<user id>"``) and
  roles (``"<platform>:<role id>"``: Discord roles, Slack user groups — the adapter puts the
  ones it knows in :attr:`bot.kernel.User.roles`). A user in several tiers gets the **best**:
  the most daily credits (no limit is most), then the most concurrent jobs, then the most chat
  tokens; a tie goes to the tier listed first. A user in none is in the tier named
  ``default``, else in one made of ``[limits]`` (``daily_credit_budget_per_user``,
  ``max_concurrent_jobs_per_user``): without tiers, everyone is, as before tiers existed.
- Concurrent jobs: a user may have at most the tier's ``concurrent_jobs`` jobs that are being
  created, in flight at the provider, sent but unconfirmed (``unknown``), or cancelled while
  the provider still runs them (``cancelled``; not one cancelled while ``unknown``: the provider
  never confirmed it, so it gives its place back at once) — both families together; ``0``
  disables the cap. Its refusal says how many of them are cancelled ones (they count until the
  provider is done).
- Credits: a user whose ledger shows the tier's ``daily_credits`` or more in its window (today,
  UTC; or, refilled ``hourly``, the last 24 whole hours) may start no new job (``0`` disables
  the budget). Credits land in the ledger when an image task's result is posted (a cancelled
  one's when the provider ends it) and when a diffusion job is accepted, so a budget can be
  overshot by the jobs already running — the cap, which counts cancelled jobs too, bounds that.
- Modes and models: a tier with ``modes`` (process modes) or ``models`` (diffusion checkpoints
  here; chat models in :mod:`bot.features.chat.caps`) refuses a job asking for another.

Admins (``User.is_admin``, decided by the adapter) bypass every cap. The caps are checked by the
store in the same transaction that writes the job row
(:meth:`storage.JobAdmission.create_job_within`), so concurrent commands — in any process
sharing the store — cannot all pass them.

A user's place among their jobs is taken before anything costly is done for a new one.

Downloading and re-hosting the files of ``/describe``, ``/blend`` and the diffusion commands
costs memory, bandwidth and room in the media folder, so a command checks the user's caps and
budget first (:meth:`Admission.admitted`) and holds a place among the user's jobs until its
job's row exists (then the row counts, and :meth:`storage.JobAdmission.create_job_within`
checks the caps again as it writes). Commands of one user running at once in this process
count each other's places: thirty at once cannot all pass a cap of three. Work that needs a
place (:meth:`Admission.require`) fails loudly outside one, so no command can download first.
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final

from bot.features.jobs.params import asked_mode
from bot.kernel import (
    Event,
    LimitsSettings,
    QuotasSettings,
    TierSettings,
    User,
    UserError,
    mode_not_in_tier,
    model_not_in_tier,
    ngettext,
    refill_time,
)
from storage import Job, JobAdmission, JobQuota, KeyRoom, NewJob, QuotaRefusal

Key = tuple[str, str]
DEFAULT_TIER: Final = "default"


@dataclass(frozen=True)
class TierMembers:
    """One tier and who is in it by configuration (for admin views): its ``users`` and
    ``roles`` as ``"<platform>:<id>"``; ``default`` when it is everyone else's."""

    tier: TierSettings
    users: tuple[str, ...]
    roles: tuple[str, ...]
    default: bool


class Tiers:
    """The tiers of ``[quotas]`` (or the one of ``[limits]``) and who is in which (see the
    module docstring); who may press a job's buttons is :mod:`bot.refs`."""

    def __init__(self, limits: LimitsSettings, quotas: QuotasSettings | None = None) -> None:
        listed = list((quotas or QuotasSettings()).tiers)
        self.configured = bool(listed)
        """Whether tiers are configured (refusals then name the tier)."""
        fallback = TierSettings(
            name=DEFAULT_TIER,
            daily_credits=max(0, limits.daily_credit_budget_per_user),
            concurrent_jobs=max(0, limits.max_concurrent_jobs_per_user),
        )
        self.default = next((t for t in listed if t.name == DEFAULT_TIER), fallback)
        self.listed = tuple(t for t in listed if t.name != DEFAULT_TIER)
        self._order = {tier.name: index for index, tier in enumerate(self.listed)}
        self._by_member: dict[str, list[TierSettings]] = {}
        for tier in self.listed:
            for member in (*tier.users, *(f"role:{role}" for role in tier.roles)):
                self._by_member.setdefault(member, []).append(tier)

    def tier_of(self, platform: str, user: User) -> TierSettings:
        """The best tier ``user`` of ``platform`` is in (see the module docstring)."""
        if not self._by_member:
            return self.default
        keys = (f"{platform}:{user.id}", *(f"role:{platform}:{role}" for role in user.roles))
        found = [tier for key in keys for tier in self._by_member.get(key, ())]
        if not found:
            return self.default
        return max(found, key=lambda tier: (*_generosity(tier), -self._order[tier.name]))

    def members(self) -> list[TierMembers]:
        """Every tier with its configured members, the default last (a read for admin
        views; who holds a role is the platform's to say)."""
        listed = [TierMembers(t, tuple(t.users), tuple(t.roles), False) for t in self.listed]
        return [*listed, TierMembers(self.default, (), (), True)]

    def quota_for(self, platform: str, user: User) -> JobQuota:
        """The limits a new job of ``user`` must respect (none for admins)."""
        if user.is_admin:
            return JobQuota()
        tier = self.tier_of(platform, user)
        return JobQuota(
            max_active=tier.concurrent_jobs,
            max_daily_credits=tier.daily_credits,
            refill=tier.refill,
        )

    def check_use(self, new: NewJob, user: User) -> None:
        """:class:`UserError` when ``new`` asks for a process mode or a model its requester's
        tier does not have."""
        if user.is_admin:
            return
        tier = self.tier_of(new.platform, user)
        if tier.modes:
            mode = None if new.family == "diffusion" else asked_mode(new)
            if mode is not None and mode not in tier.modes:
                raise UserError(mode_not_in_tier(tier, mode))
        if tier.models:
            model = _model_of(new)
            if model is not None and model not in tier.models:
                raise UserError(model_not_in_tier(tier, model))

    def refused(self, refusal: QuotaRefusal, platform: str, user: User) -> UserError:
        """The error that tells the user which limit stopped a new job, and when it frees."""
        tier = self.tier_of(platform, user).name if self.configured else None
        if refusal.limit == "max_active":
            reached = _cap_reached(refusal.used, refusal.allowed, tier)
            if refusal.cancelled:
                reached = f"{reached} {_still_finishing(refusal.cancelled)}"
            return UserError(reached)
        refill = self.quota_for(platform, user).refill
        return UserError(_budget_spent(refusal, refill, tier))


def _cap_reached(used: int, allowed: int, tier: str | None) -> str:
    """The refusal of a job past the cap of jobs at once (of ``tier``, when tiers are set)."""
    if tier is None:
        return ngettext(
            "You already have {n} image job running — the cap is {allowed}; "
            "wait for one to finish.",
            "You already have {n} image jobs running — the cap is {allowed}; "
            "wait for one to finish.",
            used,
            allowed=allowed,
        )
    return ngettext(
        "You already have {n} image job running — the cap of your tier **{tier}** is "
        "{allowed}; wait for one to finish.",
        "You already have {n} image jobs running — the cap of your tier **{tier}** is "
        "{allowed}; wait for one to finish.",
        used,
        allowed=allowed,
        tier=tier,
    )


def _still_finishing(cancelled: int) -> str:
    """What the refusal of a job past the cap says of the ``cancelled`` jobs among those it
    counts: the provider still runs them, and they count until it is done."""
    return ngettext(
        "{n} of them is cancelled and still finishing at the service.",
        "{n} of them are cancelled and still finishing at the service.",
        cancelled,
    )


def _budget_spent(refusal: QuotaRefusal, refill: str, tier: str | None) -> str:
    """The refusal of a job past the credit budget: its window and when it refills (the
    budget of ``tier``, when tiers are set)."""
    used, allowed, refills_at = refusal.used, refusal.allowed, refusal.refills_at
    if refill == "hourly" and refills_at is not None:
        back = refill_time(refills_at)
        if tier is None:
            return ngettext(
                "You have used {used} of your {n} credit in the last 24 hours — that is the "
                "budget, refilled hour by hour; enough is back at {back}.",
                "You have used {used} of your {n} credits in the last 24 hours — that is the "
                "budget, refilled hour by hour; enough is back at {back}.",
                allowed,
                used=used,
                back=back,
            )
        return ngettext(
            "You have used {used} of your {n} credit in the last 24 hours — that is the "
            "budget of your tier **{tier}**, refilled hour by hour; enough is back at {back}.",
            "You have used {used} of your {n} credits in the last 24 hours — that is the "
            "budget of your tier **{tier}**, refilled hour by hour; enough is back at {back}.",
            allowed,
            used=used,
            back=back,
            tier=tier,
        )
    if tier is None:
        return ngettext(
            "You have used {used} of your {n} credit for today — that is the daily budget; "
            "it resets at 00:00 UTC.",
            "You have used {used} of your {n} credits for today — that is the daily budget; "
            "it resets at 00:00 UTC.",
            allowed,
            used=used,
        )
    return ngettext(
        "You have used {used} of your {n} credit for today — that is the daily budget of "
        "your tier **{tier}**; it resets at 00:00 UTC.",
        "You have used {used} of your {n} credits for today — that is the daily budget of "
        "your tier **{tier}**; it resets at 00:00 UTC.",
        allowed,
        used=used,
        tier=tier,
    )


def _generosity(tier: TierSettings) -> tuple[float, float, float]:
    """What makes a tier better than another, in order (0, no limit, counts as infinite)."""
    credits, jobs, tokens = (
        math.inf if limit == 0 else float(limit)
        for limit in (tier.daily_credits, tier.concurrent_jobs, tier.daily_chat_tokens)
    )
    return credits, jobs, tokens


def _model_of(new: NewJob) -> str | None:
    """The diffusion checkpoint ``new`` asks for, if any."""
    body = new.parameters.get("body")
    model = body.get("model_id") if isinstance(body, Mapping) else None
    return model if isinstance(model, str) and model else None


@dataclass
class _Place:
    key: Key
    held: bool = True


_PLACE: ContextVar[_Place | None] = ContextVar("genbot_job_place", default=None)


class Admission:
    """The places of this process's commands among their users' jobs."""

    def __init__(self, store: JobAdmission, tiers: Tiers) -> None:
        self._store = store
        self._tiers = tiers
        self._pending: Counter[Key] = Counter()

    @contextlib.asynccontextmanager
    async def admitted(self, event: Event) -> AsyncIterator[None]:
        """Hold a place for ``event``'s user while the block runs; :class:`UserError` (which
        cap, or the budget) when there is none."""
        key = (event.place.platform, event.user.id)
        place = _Place(key)
        self._pending[key] += 1
        token = _PLACE.set(place)
        try:
            quota = self._tiers.quota_for(event.place.platform, event.user)
            refusal = await self._store.quota_refusal(*key, quota, pending=self._pending[key] - 1)
            if refusal is not None:
                raise self._tiers.refused(refusal, event.place.platform, event.user)
            yield
        finally:
            _PLACE.reset(token)
            self._release(place)

    async def create(
        self, new: NewJob, user: User, keys: Sequence[KeyRoom] = ()
    ) -> tuple[Job, bool]:
        """Write ``new``'s row within the caps of ``user``'s tier, which the store checks as it
        writes (:class:`UserError` naming the cap, the budget, the mode or the model that
        refuses it): the job and whether this call created it (not when a job with its key
        exists). A created row counts from now on: the command's place, if it holds one, is
        given back. A job without a provider key gets the first of ``keys`` with room
        (:class:`storage.NoKeyRoom`)."""
        self._tiers.check_use(new, user)
        quota = self._tiers.quota_for(new.platform, user)
        admitted = await self._store.create_job_within(new, quota, keys)
        if isinstance(admitted, QuotaRefusal):
            raise self._tiers.refused(admitted, new.platform, user)
        job, created = admitted
        if created:
            self._row_created()
        return job, created

    def _row_created(self) -> None:
        """The job of the command holding a place has its row: the row counts from now on."""
        place = _PLACE.get()
        if place is not None:
            self._release(place)

    @staticmethod
    def require() -> None:
        """Refuse costly work for a command that holds no place (a programming error)."""
        if _PLACE.get() is None:
            raise RuntimeError("costly work before the user's caps were checked: use admitted()")

    def _release(self, place: _Place) -> None:
        if not place.held:
            return
        place.held = False
        self._pending[place.key] -= 1
        if self._pending[place.key] <= 0:
            del self._pending[place.key]
