"""Admission: whether a user may start a new image or diffusion job — the caps and budgets
(:class:`JobCaps`) and a user's place among their jobs (:class:`Admission`).

- Concurrent jobs: a user may have at most ``max_concurrent_jobs_per_user`` jobs that are being
  created, in flight at the provider, or sent but unconfirmed (``unknown``) — both families
  together; ``0`` disables the cap.
- Daily credits: a user whose ledger shows ``daily_credit_budget_per_user`` credits or more today
  (UTC) may start no new job (``0`` disables the budget). Credits land in the ledger when an
  image task's result is posted and when a diffusion job is accepted, so a budget can be
  overshot by the jobs already running — the cap bounds that.

Admins (``User.is_admin``, decided by the adapter) bypass every cap. The caps are checked by the
store in the same transaction that writes the job row
(:meth:`storage.JobAdmission.create_job_within`), so concurrent commands cannot all pass them.

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
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from bot.kernel import Event, LimitsSettings, User, UserError
from storage import Job, JobAdmission, JobQuota, KeyRoom, NewJob, QuotaRefusal

Key = tuple[str, str]


class JobCaps:
    """The caps of ``[limits]`` (who may press a job's buttons: :mod:`bot.refs`)."""

    def __init__(self, settings: LimitsSettings) -> None:
        self.settings = settings

    def quota_for(self, user: User) -> JobQuota:
        """The limits a new job of ``user`` must respect (none for admins)."""
        if user.is_admin:
            return JobQuota()
        return JobQuota(
            max_active=self.settings.max_concurrent_jobs_per_user,
            max_daily_credits=self.settings.daily_credit_budget_per_user,
        )

    @staticmethod
    def refused(refusal: QuotaRefusal) -> UserError:
        """The error that tells the user which limit stopped a new job."""
        if refusal.limit == "max_active":
            jobs = "job" if refusal.used == 1 else "jobs"
            return UserError(
                f"You already have {refusal.used} image {jobs} running — the cap is "
                f"{refusal.allowed}; wait for one to finish."
            )
        return UserError(
            f"You have used {refusal.used} of your {refusal.allowed} credits for today — that is "
            "the daily budget; it resets at 00:00 UTC."
        )


@dataclass
class _Place:
    key: Key
    held: bool = True


_PLACE: ContextVar[_Place | None] = ContextVar("genbot_job_place", default=None)


class Admission:
    """The places of this process's commands among their users' jobs."""

    def __init__(self, store: JobAdmission, caps: JobCaps) -> None:
        self._store = store
        self._caps = caps
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
            refusal = await self._store.quota_refusal(
                *key, self._caps.quota_for(event.user), pending=self._pending[key] - 1
            )
            if refusal is not None:
                raise self._caps.refused(refusal)
            yield
        finally:
            _PLACE.reset(token)
            self._release(place)

    async def create(
        self, new: NewJob, user: User, keys: Sequence[KeyRoom] = ()
    ) -> tuple[Job, bool]:
        """Write ``new``'s row within ``user``'s caps, which the store checks as it writes
        (:class:`UserError` naming the cap, or the budget, that refuses it): the job and
        whether this call created it (not when a job with its key exists). A created row
        counts from now on: the command's place, if it holds one, is given back. A job without
        a provider key gets the first of ``keys`` with room (:class:`storage.NoKeyRoom`)."""
        admitted = await self._store.create_job_within(new, self._caps.quota_for(user), keys)
        if isinstance(admitted, QuotaRefusal):
            raise self._caps.refused(admitted)
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
