"""Caps, budgets and button permissions for image and diffusion jobs.

- Concurrent jobs: a user may have at most ``max_concurrent_jobs_per_user`` jobs that are being
  created, in flight at the provider, or sent but unconfirmed (``unknown``) — both families
  together; ``0`` disables the cap.
- Daily credits: a user whose ledger shows ``daily_credit_budget_per_user`` credits or more today
  (UTC) may start no new job (``0`` disables the budget). Credits land in the ledger when an
  image task's result is posted and when a diffusion job is accepted, so a budget can be
  overshot by the jobs already running — the cap bounds that.
- Buttons act only for the job's requester, unless the channel is open for the platform (the
  adapters' ``open_channel_ids``, given by the composition root), or the presser is an admin.

Admins (``User.is_admin``, decided by the adapter) bypass every cap. The caps are checked by the
store in the same transaction that writes the job row
(:meth:`storage.JobAdmission.create_job_within`), so concurrent commands cannot all pass them.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.config import LimitsSettings
from bot.core import UserError
from bot.events import Event, User
from storage import Job, JobQuota, QuotaRefusal


class Limits:
    """The caps of ``[limits]`` and the button permission rule."""

    def __init__(
        self,
        settings: LimitsSettings,
        open_channels: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        self.settings = settings
        self.open_channels: dict[str, frozenset[str]] = dict(open_channels or {})

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

    def may_press(self, event: Event, job: Job) -> bool:
        """Whether ``event``'s user may use the buttons (or forms) of ``job``."""
        if event.user.is_admin or event.user.id == job.requester_id:
            return True
        return event.place.channel_id in self.open_channels.get(event.place.platform, frozenset())

    def check_press(self, event: Event, job: Job) -> None:
        """Raise :class:`UserError` unless ``event``'s user may use ``job``'s buttons."""
        if not self.may_press(event, job):
            raise UserError(
                "Only the person who started this job can use its buttons here "
                "(this channel is not open to everyone)."
            )
