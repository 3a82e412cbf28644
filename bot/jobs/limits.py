"""Caps, budgets and button permissions for image and diffusion jobs.

- Concurrent jobs: a user may have at most ``max_concurrent_jobs_per_user`` jobs that are being
  created or are in flight at the provider (both families together; ``0`` disables the cap).
- Daily credits: a user whose ledger shows ``daily_credit_budget_per_user`` credits or more today
  (UTC) may start no new job (``0`` disables the budget). Credits land in the ledger when a job
  finishes, so a budget can be overshot by the jobs already running — the cap bounds that.
- Buttons act only for the job's requester, unless the channel is configured open for the
  platform (``open_channel_ids``), or the presser is an admin.

Admins (``User.is_admin``, decided by the adapter) bypass every cap. Both checks read the
database just before the job row is written; two commands racing may both pass (the caps are
guards against runaway spending, not exact quotas).
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.config import LimitsSettings, Settings
from bot.core import UserError
from bot.events import Event, User
from storage import Job, Store


def open_channels_from(settings: Settings) -> dict[str, frozenset[str]]:
    """The channels whose job buttons anyone may press, per platform, from ``[discord]`` and
    ``[slack]`` ``open_channel_ids``."""
    return {
        "discord": frozenset(str(channel) for channel in settings.discord.open_channel_ids),
        "slack": frozenset(settings.slack.open_channel_ids),
    }


class Limits:
    """The caps of ``[limits]`` and the button permission rule."""

    def __init__(
        self,
        store: Store,
        settings: LimitsSettings,
        open_channels: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        self._store = store
        self.settings = settings
        self.open_channels: dict[str, frozenset[str]] = dict(open_channels or {})

    async def check_new_job(self, user: User, platform: str) -> None:
        """Raise :class:`UserError` when ``user`` may not start another job now."""
        if user.is_admin:
            return
        cap = self.settings.max_concurrent_jobs_per_user
        if cap > 0:
            running = await self._store.count_active_jobs(platform, user.id)
            if running >= cap:
                jobs = "job" if running == 1 else "jobs"
                raise UserError(
                    f"You already have {running} image {jobs} running — the cap is {cap}; "
                    "wait for one to finish."
                )
        budget = self.settings.daily_credit_budget_per_user
        if budget > 0:
            used = (await self._store.usage_for_user(platform, user.id)).credits
            if used >= budget:
                raise UserError(
                    f"You have used {used} of your {budget} credits for today — that is the "
                    "daily budget; it resets at 00:00 UTC."
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
