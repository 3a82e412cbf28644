"""Caps and budgets for image and diffusion jobs.

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
"""

from __future__ import annotations

from bot.kernel import LimitsSettings, User, UserError
from storage import JobQuota, QuotaRefusal


class Limits:
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
