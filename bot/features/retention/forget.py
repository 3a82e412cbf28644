"""``/forget-me``: what genbot keeps about the user, counted per kind, and a button deleting
it (:meth:`storage.Retention.forget`, plus what the platform's surface keeps: the playground's
messages and images). The preview lists the kinds :meth:`storage.Retention.kept` and the surface
count, the confirmation those the deletion counted as it erased them: one list,
:data:`storage.queries.user_data.USER_DATA`. The user's answers still being written are stopped
first (:class:`~bot.features.retention.answers.UserAnswers`), so the deletion erases them with the
rest. Their unfinished jobs are renamed to a name derived from their id
(:func:`storage.queries.retention.erased_name`: they still count under the user's cap), and
erased instead of delivered when they finish
(:meth:`bot.features.jobs.messages.JobMessages.deliver`): both the preview and the
confirmation say how many; one whose result is being posted at that moment stays, and the
confirmation says to ask again once it is posted. What they spent in their budgets' window and
the day's refused prompts are kept under that name too, so deleting one's data resets no limit:
both answers say so. Admins name another user
(``/forget-me <@user>``); their deletion is recorded in the audit log under the pseudonym the
records that stay name instead, never the user's id. Every answer is private.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar, Final

from bot.features.audit import AuditTrail
from bot.features.retention.answers import UserAnswers
from bot.kernel import (
    N_,
    Button,
    ButtonPress,
    Command,
    Event,
    ModalSubmit,
    OptionValue,
    OutMessage,
    SendsPrivately,
    UserError,
    _,
    format_moment,
    mentioned_user,
    named,
    ngettext,
    written,
)
from bot.outbox import Notice, Outbox, Private, WritePolicy
from bot.refs import NoReferent, RefKind, UserReferent, Work
from storage import Retention

FORGET_ACTION: Final = "forget_me"
"""Deleting the presser's own data (its ref names nothing)."""
FORGET_USER_ACTION: Final = "forget_user"
"""An admin deleting the data of the user its ref names."""
ADMINS_ONLY: Final = N_("Only genbot admins can delete another user's data.")
NOT_PRIVATE: Final = N_("This platform cannot show you this privately: use genbot on another one.")
NAME_ONE: Final = N_("Name one user: {example} (admins), or nothing for your own data.")
KINDS: Final[Mapping[str, tuple[str, str]]] = {
    "conversations": (
        N_("Conversations you started"),
        N_("Conversations user `{user}` started"),
    ),
    "messages": (N_("Chat messages in them"), N_("Chat messages in them")),
    "messages_in_others": (
        N_("Your messages in others' conversations (they stay, naming nobody)"),
        N_("Their messages in others' conversations (they stay, naming nobody)"),
    ),
    "answers": (
        N_("Answers to you in others' conversations (they stay, naming nobody)"),
        N_("Answers to them in others' conversations (they stay, naming nobody)"),
    ),
    "feedback": (N_("Your 👍/👎 on answers"), N_("Their 👍/👎 on answers")),
    "jobs": (
        N_("Jobs (prompts, parameters, result links)"),
        N_("Jobs (prompts, parameters, result links)"),
    ),
    "settings": (N_("Personal settings"), N_("Personal settings")),
    "saved_options": (
        N_("Saved options and suffix (/prefer)"),
        N_("Saved options and suffix (/prefer)"),
    ),
    "batches": (
        N_("Previews of several jobs, and jobs waiting in your queue"),
        N_("Previews of several jobs, and jobs waiting in their queue"),
    ),
    "uploads": (
        N_("Images you attached, hosted for the provider"),
        N_("Images they attached, hosted for the provider"),
    ),
    "usage_days": (N_("Days of usage history"), N_("Days of usage history")),
    "moderation_days": (N_("Days of moderation record"), N_("Days of moderation record")),
    "rules": (
        N_("Moderation rules you added (they stay, naming an anonymous id)"),
        N_("Moderation rules they added (they stay, naming an anonymous id)"),
    ),
    "audit_entries": (N_("Audit log entries naming you"), N_("Audit log entries naming them")),
    "channel_in_view": (
        N_("The channel you last looked at beside genbot's Messages tab"),
        N_("The channel they last looked at beside genbot's Messages tab"),
    ),
    "playground_messages": (N_("Playground messages"), N_("Playground messages")),
    "playground_images": (N_("Playground images"), N_("Playground images")),
    "playground_files": (
        N_("Playground files held for you (uploads not sent yet, exports to download)"),
        N_("Playground files held for them (uploads not sent yet, exports to download)"),
    ),
}
"""The label of each kind of a user's data (:data:`storage.queries.user_data.USER_DATA`'s,
then what a platform's surface keeps, :meth:`bot.outbox.Outbox.kept_about`), about the user's
own data and about another user's. The preview and the confirmation list the kinds the store and
the surface count, so what is deleted is what was shown."""
AFTERWARDS: Final = N_(
    "Deleting is permanent, and it resets no limit: what was spent in the budgets' current "
    "window (credits, chat tokens) and the day's refused prompts still count until they "
    "refill, kept under a name derived from the id (not the id); usage stays otherwise only as "
    "anonymous daily totals. Audit log entries stay, naming an anonymous id instead. Images "
    "already posted in channels stay there: delete those messages on the platform."
)
"""What the preview says stays: what still counts against the user's limits (kept under
:func:`storage.queries.retention.erased_name` until it no longer counts), anonymous usage, the
audit log and what the platform shows."""


class ForgetFeature:
    """``/forget-me`` and its confirmation (see the module docstring)."""

    commands = frozenset({"forget-me"})
    actions: ClassVar[Mapping[str, RefKind]] = {
        FORGET_ACTION: RefKind.NONE,
        FORGET_USER_ACTION: RefKind.USER,
    }
    work: ClassVar[Mapping[str, Work]] = dict.fromkeys(actions, Work.FREE)

    def __init__(
        self,
        store: Retention,
        outbox: Outbox,
        audit: AuditTrail,
        clock: Callable[[], float],
        *,
        answers: UserAnswers | None = None,
    ) -> None:
        self.store = store
        self.outbox = outbox
        self.audit = audit
        self.clock = clock
        self.answers = answers
        """Stops the user's answers before the deletion (None: no chat here)."""

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """What is kept about the user (or, for an admin, the user named), with the button
        that deletes it."""
        given = str(options.get("user") or "").strip()
        user_id = mentioned_user(given) if given else event.user.id
        if not user_id:
            raise UserError(_(NAME_ONE, example=written("forget-me", "<@user>")))
        if user_id != event.user.id and not self._may_name_others(event):
            raise UserError(_(ADMINS_ONLY))
        platform = event.place.platform
        if not self.outbox.can(platform, SendsPrivately):
            raise UserError(_(NOT_PRIVATE))
        kept = await self.store.kept(platform, user_id)
        kinds = {**kept.kinds, **await self.outbox.kept_about(platform, user_id)}
        yours = user_id == event.user.id
        self._refuse_while_banned(kept.banned_until, yours)
        lines = [*_lines(kinds, yours, user_id), *_erased_later(kept.running)]
        head = (
            _("**What genbot keeps about you** on {platform}:", platform=platform)
            if yours
            else _(
                "**What genbot keeps about user `{user}`** on {platform}:",
                user=user_id,
                platform=platform,
            )
        )
        text = "\n".join([head, *lines, "", _(AFTERWARDS)])
        if yours:
            button = Button(_("Delete all of it"), FORGET_ACTION, "", style="danger")
        else:
            button = Button(
                _("Delete all of their data"), FORGET_USER_ACTION, user_id, style="danger"
            )
        await self.outbox.write(
            event.place,
            Private(event, OutMessage(text=text, buttons=((button,),))),
            WritePolicy.NOW,
        )

    async def on_button(self, event: ButtonPress, referent: UserReferent | NoReferent) -> None:
        """The confirmation: delete, then say what went."""
        user_id = referent.user_id if isinstance(referent, UserReferent) else event.user.id
        yours = user_id == event.user.id
        platform = event.place.platform
        before = await self.store.kept(platform, user_id)
        if yours:
            self._refuse_while_banned(before.banned_until, True)
        if self.answers is not None:
            await self.answers.end(await self.store.answering(platform, user_id))
        gone, pseudonym = await self.store.forget(platform, user_id)
        shown = {**gone, **await self.outbox.forget_user(platform, user_id)}
        if not yours:
            await self.audit.record(
                "user.forgotten", event.place, event.user.id, pseudonym, after=shown
            )
        head = (
            _(
                "**Your data on {platform} is deleted.** What you spent in your budgets' "
                "current window and today's refused prompts still count against your limits "
                "until they refill; usage stays otherwise only as anonymous totals; records "
                "that must stay name `{pseudonym}`. What went:",
                platform=platform,
                pseudonym=pseudonym,
            )
            if yours
            else _(
                "**The data of user `{user}` on {platform} is deleted.** What they spent in "
                "their budgets' current window and the day's refused prompts still count "
                "against their limits until they refill; usage stays otherwise only as "
                "anonymous totals; records that must stay name `{pseudonym}`. What went:",
                user=user_id,
                platform=platform,
                pseudonym=pseudonym,
            )
        )
        went = {kind: count for kind, count in shown.items() if count}
        posting = (await self.store.kept(platform, user_id)).running
        erased_later = _erased_later(max(before.running - posting, 0))
        text = "\n".join([head, *_lines(went, yours, user_id), *erased_later, *_running(posting)])
        if not await self.outbox.tell_forgotten(event, text):
            await self.outbox.write(event.place, Notice(event, text), WritePolicy.NOW)

    async def on_modal(self, event: ModalSubmit, referent: UserReferent | NoReferent) -> None:
        """It has no forms."""
        raise UserError(_("This form is no longer supported."))

    @staticmethod
    def _may_name_others(event: Event) -> bool:
        return event.user.is_admin

    def _refuse_while_banned(self, until: float, yours: bool) -> None:
        if yours and until > self.clock():
            ends = format_moment(until)
            raise UserError(
                _(
                    "You are banned until {ends}: your data can be deleted once the ban has ended.",
                    ends=ends,
                )
            )


def _lines(kinds: Mapping[str, int], yours: bool, user_id: str) -> list[str]:
    """One line per kind of data, its label and its count."""
    return [f"- {_label(kind, yours, user_id)}: {count}" for kind, count in kinds.items()]


def _erased_later(jobs: int) -> list[str]:
    """The line saying that ``jobs`` unfinished jobs are erased when they finish instead of
    being posted (none when there are none): in the preview, and again under what went."""
    if not jobs:
        return []
    line = ngettext(
        "{n} job still running: it is erased when it finishes, instead of being posted.",
        "{n} jobs still running: they are erased when they finish, instead of being posted.",
        jobs,
    )
    return [f"- {line}"]


def _running(jobs: int) -> list[str]:
    """The line saying that ``jobs`` unfinished jobs stay (none when there are none): under
    what went, for the jobs whose results were being posted as the deletion ran."""
    if not jobs:
        return []
    line = ngettext(
        "{n} job still running stays until it finishes: run {forget} again then.",
        "{n} jobs still running stay until they finish: run {forget} again then.",
        jobs,
        forget=named("forget-me"),
    )
    return [f"- {line}"]


def _label(kind: str, yours: bool, user_id: str) -> str:
    if kind not in KINDS:
        return kind.replace("_", " ").capitalize()
    mine, theirs = KINDS[kind]
    return _(mine if yours else theirs, user=user_id)
