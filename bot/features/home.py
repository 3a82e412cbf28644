"""A user's home with genbot (Slack's App Home tab): their defaults and the language genbot
speaks to them, with a button to change them, their usage today, and their last image jobs, each
with a button that posts its result again in their conversation with genbot.

The core gathers what the home shows (:class:`HomeView`) and the surface draws it, through its
optional ``publish_home(event, view)``. Draws of one user's home take turns, at most one per
:data:`HOME_INTERVAL_SECONDS`, and coalesce: however many opens arrive while one is drawn or
waits its turn, they make one more draw. A draw the platform refuses for its rate limit is
logged (not an error) and tried once more after the wait it names, when that is at most
:data:`HOME_RETRY_SECONDS`. Posting a result again is
:class:`bot.features.jobs.copies.ResultCopies`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from bot.features.account import SETTINGS_ACTION
from bot.features.jobs import Tiers, wording
from bot.features.jobs.copies import ResultCopies
from bot.features.jobs.messages import place_of
from bot.features.jobs.result_messages import ResultMessages
from bot.kernel import (
    LANGUAGES,
    N_,
    Button,
    ButtonPress,
    Command,
    HomeJob,
    HomeOpened,
    HomeSetting,
    HomeView,
    MessageRef,
    ModalSubmit,
    OptionValue,
    Place,
    PublishesHome,
    RateLimited,
    User,
    UserError,
    _,
    format_number,
    language,
    language_name,
)
from bot.outbox import Outbox, PublishHome, WritePolicy
from bot.refs import JobReferent, RefKind, Work
from storage import (
    EffectiveSettings,
    Job,
    JobHistory,
    MessageLinks,
    SettingsReader,
    SettingValues,
    UsageLedger,
)

log = logging.getLogger(__name__)

REPOST_ACTION = "repost"
RECENT_JOBS = 10
MOST_JOBS_READ = 320
"""How far back the home looks for images among a user's posted jobs."""
IMAGE_FAMILIES = frozenset({"task", "diffusion"})
HOME_INTERVAL_SECONDS = 1.0
HOME_RETRY_SECONDS = 30.0
HOMES_REMEMBERED = 4096
"""The longest wait before drawing a home again after the platform's rate limit refused it."""
SHOWN_SETTINGS: tuple[tuple[str, str], ...] = (
    ("model", N_("Chat model")),
    ("temperature", N_("Temperature")),
    ("process_mode", N_("Image speed")),
    ("aspect_ratio", N_("Aspect ratio")),
)
SOURCES = {
    # Translators: whose default a setting on the Home is, shown after it as "(yours)".
    "user": N_("yours"),
    # Translators: whose default a setting on the Home is, shown as "(this channel's)".
    "channel": N_("this channel's"),
    # Translators: whose default a setting on the Home is, shown as "(the workspace's)".
    "workspace": N_("the workspace's"),
    # Translators: whose default a setting on the Home is, shown as "(genbot's default)".
    "default": N_("genbot's default"),
}


@dataclass(frozen=True)
class HomeStorage:
    """What the home reads (and the links of re-posted results)."""

    settings: SettingsReader
    ledger: UsageLedger
    history: JobHistory
    message_links: MessageLinks


class HomeFeature:
    """Draws homes and posts results again (the ``repost`` button)."""

    commands: frozenset[str] = frozenset()
    actions: ClassVar[Mapping[str, RefKind]] = {REPOST_ACTION: RefKind.JOB}
    work: ClassVar[Mapping[str, Work]] = {REPOST_ACTION: Work.FREE}

    def __init__(
        self,
        store: HomeStorage,
        outbox: Outbox,
        results: ResultMessages,
        *,
        defaults: SettingValues | None = None,
        daily_credit_budget: int | None = None,
        tiers: Tiers | None = None,
    ) -> None:
        """``daily_credit_budget`` is shown beside today's credits; with ``tiers`` configured,
        the user's tier's ``daily_credits`` instead."""
        self.store = store
        self.tiers = tiers
        self.outbox = outbox
        self.copies = ResultCopies(outbox, results, store.message_links)
        self.defaults = defaults or SettingValues()
        self.daily_credit_budget = daily_credit_budget or None
        self._drawing: dict[tuple[str, str, str], list[HomeOpened]] = {}
        self._drawn_at: OrderedDict[tuple[str, str, str], float] = OrderedDict()

    async def on_home(self, event: HomeOpened) -> None:
        """Draw ``event.user``'s home, where the surface has one (coalesced per user: see the
        module docstring)."""
        if not self.outbox.can(event.place.platform, PublishesHome):
            return
        key = (event.place.platform, event.place.workspace_id, event.user.id)
        waiting = self._drawing.get(key)
        if waiting is not None:
            waiting[:] = [event]
            return
        self._drawing[key] = waiting = [event]
        try:
            while waiting:
                drawn_at = self._drawn_at.get(key)
                if drawn_at is not None:
                    await asyncio.sleep(drawn_at + HOME_INTERVAL_SECONDS - time.monotonic())
                await self._draw(waiting.pop())
                self._drawn_at[key] = time.monotonic()
                self._drawn_at.move_to_end(key)
                while len(self._drawn_at) > HOMES_REMEMBERED:
                    self._drawn_at.popitem(last=False)
        finally:
            del self._drawing[key]

    async def _draw(self, event: HomeOpened) -> None:
        for attempt in (1, 2):
            try:
                view = await self.view(event)
                await self.outbox.write(event.place, PublishHome(event, view), WritePolicy.NOW)
                return
            except RateLimited as limited:
                log.info("the home of %s is rate limited (%s)", event.user.id, limited)
                if attempt == 2 or limited.retry_after > HOME_RETRY_SECONDS:
                    return
                await asyncio.sleep(limited.retry_after)

    async def view(self, event: HomeOpened) -> HomeView:
        """What ``event.user``'s home shows now."""
        place, user = event.place, event.user
        settings = await self.store.settings.effective_settings(
            place.platform,
            user_id=user.id,
            channel_id=None,
            workspace_id=place.workspace_id or None,
            defaults=self.defaults,
        )
        usage = await self.store.ledger.usage_for_user(place.platform, user.id)
        images = await self._recent_images(place, user.id)
        return HomeView(
            settings=_settings(settings),
            change_settings=Button(_("Change my defaults"), SETTINGS_ACTION, "", "primary"),
            usage=usage,
            daily_credit_budget=self._budget(place.platform, user),
            jobs=tuple(_home_job(job) for job in images),
        )

    def _budget(self, platform: str, user: User) -> int | None:
        if self.tiers is None or not self.tiers.configured:
            return self.daily_credit_budget
        return self.tiers.tier_of(platform, user).daily_credits or None

    async def _recent_images(self, place: Place, user_id: str) -> list[Job]:
        """The user's newest posted jobs that show an image (at most ``RECENT_JOBS``), reading
        more jobs while the newest ones are mostly without an image (descriptions, seeds)."""
        limit = RECENT_JOBS * 2
        while True:
            jobs = await self.store.history.recent_jobs(
                place.platform, user_id, workspace_id=place.workspace_id, limit=limit
            )
            images = [job for job in jobs if _has_image(job)]
            if len(images) >= RECENT_JOBS or len(jobs) < limit or limit >= MOST_JOBS_READ:
                return images[:RECENT_JOBS]
            limit *= 4

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        raise UserError(_("genbot's home has no commands."))

    async def on_modal(self, event: ModalSubmit, referent: JobReferent) -> None:
        raise UserError(_("This form is no longer supported."))

    async def on_button(self, event: ButtonPress, referent: JobReferent) -> None:
        """Post the result of the job in the button's reference again, in the presser's
        conversation with genbot."""
        job = referent.job
        if job.status != "posted" or job.result_message_id is None:
            raise UserError(_("That job has no result to post again."))
        if job.requester_id != event.user.id and not event.user.is_admin:
            raise UserError(_("Only the person who made this image can post it again from here."))
        await self.copies.post_again(job, event)


def _has_image(job: Job) -> bool:
    if job.family not in IMAGE_FAMILIES or job.type in ("describe", "seed"):
        return False
    return bool(job.result_urls) and job.result_message_id is not None


def _home_job(job: Job) -> HomeJob:
    result = MessageRef(place_of(job), job.result_message_id) if job.result_message_id else None
    return HomeJob(
        job=job,
        title=wording.result_text(job),
        result=result,
        # Translators: a button on the Home that posts an image's result again.
        repost=Button(_("Post again"), REPOST_ACTION, job.id),
    )


def _settings(settings: EffectiveSettings) -> tuple[HomeSetting, ...]:
    shown = []
    for name, label in SHOWN_SETTINGS:
        value = getattr(settings, name, None)
        source = settings.sources.get(name, "default")
        text = (
            _("provider's default")
            if value is None
            else (format_number(value, grouping=False) if isinstance(value, float) else str(value))
        )
        whose = SOURCES.get(source)
        shown.append(HomeSetting(_(label), text, _(whose) if whose else str(source)))
    return (*shown, _language(settings))


def _language(settings: EffectiveSettings) -> HomeSetting:
    """The language genbot speaks to the user: theirs (``/settings language``), else the one it
    follows on its own (their app's, else the place's: :func:`bot.kernel.decide`)."""
    # Translators: a setting on the Home: the language genbot speaks to the user.
    label = _("Language")
    if settings.sources.get("language") == "user" and settings.language in LANGUAGES:
        return HomeSetting(label, language_name(settings.language), _(SOURCES["user"]))
    # Translators: whose choice the language on the Home is, shown as "(automatic)": genbot
    # follows the user's app (or the place's language) on its own.
    return HomeSetting(label, language_name(language()), _("automatic"))
