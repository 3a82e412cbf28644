"""``/admin moderation add|remove|list``: a workspace's own moderation rules, set by its admins;
``ban <user> [--minutes N]``, which bans a user (for the longest configured ban by default), and
``unban <user>``, which ends a user's running ban (Discord: ``/admin moderation``; Slack:
``/genbot admin moderation``; the playground: ``/admin moderation``). Text platforms give the
action as the first word (``/admin moderation add nude --category nsfw``, ``… add
"decapitat\\w*" --pattern --category gore``, ``… remove nude``, ``… list``, ``… unban <@user
or id>``). A ban names a user by a mention, or by an id genbot has seen in the workspace (a
typo bans nobody); an admin cannot ban themself. Every answer is private; only admins may use it
(``User.is_admin``, decided by each adapter from its settings), in a channel of the workspace.
Each change is recorded in the audit log (:mod:`bot.features.audit`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Final

from bot.features.audit.trail import AuditTrail
from bot.features.moderation.rules import BadPattern, compile_pattern, rule_problem, word_problem
from bot.features.moderation.screen import global_rules
from bot.kernel import (
    N_,
    ButtonPress,
    Command,
    ModalSubmit,
    ModerationSettings,
    OptionValue,
    Place,
    User,
    UserError,
    _,
    format_moment,
    mentioned_user,
    named,
    ngettext,
    sentences,
    written,
)
from bot.outbox import Notice, Outbox, WritePolicy
from bot.refs import NoReferent, RefKind, Work
from storage import ModerationRule, ModerationStore

ACTIONS: Final = ("add", "remove", "list", "ban", "unban")
DEFAULT_CATEGORY: Final = "blocked"
MAX_CATEGORY = 40
MAX_ENTRY = 200
MAX_BAN_MINUTES: Final = 30 * 24 * 60
ADMINS_ONLY: Final = N_("Only genbot admins can change a workspace's moderation rules.")
IN_A_CHANNEL: Final = N_(
    "Moderation rules belong to a workspace: run {moderation} in one of its channels."
)


def _text(options: Mapping[str, OptionValue], name: str) -> str:
    value = options.get(name)
    return str(value).strip() if value is not None else ""


def action_and_entry(options: Mapping[str, OptionValue]) -> tuple[str, str]:
    """The action (its option, else the entry's first word) and the entry; ``list`` when
    neither names one; :class:`UserError` for an action option that is none of :data:`ACTIONS`
    (the admin page sends one: it is not taken for a listing)."""
    action, entry = _text(options, "action").lower(), _text(options, "entry")
    if action and action not in ACTIONS:
        raise UserError(
            # Translators: add, remove, list, ban and unban are the command's words: keep them.
            _(
                "{moderation} has no action {action}: use add, remove, list, ban or unban.",
                moderation=named("admin.moderation"),
                action=repr(action[:40]),
            )
        )
    if not action:
        first, _space, rest = entry.partition(" ")
        if first.lower() in ACTIONS:
            action, entry = first.lower(), rest.strip()
    if not action:
        if entry:
            raise UserError(
                # Translators: add, remove, list, ban and unban are the command's words: keep them.
                _(
                    "Start with add, remove, list, ban or unban: {example}.",
                    example=written("admin.moderation", f"add {entry} --category …"),
                )
            )
        action = "list"
    return action, _unquoted(entry)


def _unquoted(entry: str) -> str:
    for open_, close in (('"', '"'), ("“", "”"), ("'", "'")):
        if len(entry) > 1 and entry.startswith(open_) and entry.endswith(close):
            return entry[1:-1]
    return entry


def banned_user(entry: str, action: str = "unban") -> str:
    """The user id a ``ban`` or ``unban`` names: a mention (``<@123>``, ``<@U1|name>``) or a
    bare id."""
    user = mentioned_user(entry)
    if not user:
        raise UserError(
            _(
                "Say whom to ban: {example}.",
                example=written("admin.moderation", "ban <@user or user id>"),
            )
            if action == "ban"
            else _(
                "Say whom to unban: {example}.",
                example=written("admin.moderation", "unban <@user or user id>"),
            )
        )
    return user


def ban_minutes(options: Mapping[str, OptionValue], settings: ModerationSettings) -> int:
    """How long ``ban`` bans: ``--minutes``, else the longest configured ban (an hour when none
    is)."""
    given = options.get("minutes")
    if given is None or given == "":
        return max(settings.ban_minutes, default=60) or 60
    try:
        minutes = int(str(given))
    except ValueError:
        minutes = 0
    if not 1 <= minutes <= MAX_BAN_MINUTES:
        raise UserError(
            _("A ban lasts 1 to {most} minutes (got {given}).", most=MAX_BAN_MINUTES, given=given)
        )
    return minutes


def new_rule(options: Mapping[str, OptionValue], entry: str) -> ModerationRule:
    """The rule ``/admin moderation add`` describes; :class:`UserError` for one genbot would
    never match or cannot run."""
    category = _text(options, "category") or DEFAULT_CATEGORY
    pattern = options.get("pattern") is True
    if not entry:
        raise UserError(
            _(
                "Say what to add: {example}.",
                example=written("admin.moderation", "add <word or phrase> --category …"),
            )
        )
    if len(entry) > MAX_ENTRY or len(category) > MAX_CATEGORY:
        raise UserError(
            _(
                "A rule is at most {entry} characters, its category at most {category}.",
                entry=MAX_ENTRY,
                category=MAX_CATEGORY,
            )
        )
    rule = ModerationRule(category, entry, pattern)
    if pattern:
        try:
            compile_pattern(entry)
        except BadPattern as error:
            raise UserError(_("That pattern cannot be used: {error}.", error=error)) from None
    elif (problem := word_problem(entry)) is not None:
        raise UserError(_("That rule cannot be used: {problem}.", problem=problem))
    return rule


def _listed(rule: ModerationRule) -> str:
    problem = rule_problem(rule)
    if not rule.pattern:
        if problem:
            return _(
                "• **{category}**: `{entry}` (inactive: {problem})",
                category=rule.category,
                entry=rule.entry,
                problem=problem,
            )
        return f"• **{rule.category}**: `{rule.entry}`"
    if problem:
        return _(
            "• **{category}**: `{entry}` (pattern, inactive: {problem})",
            category=rule.category,
            entry=rule.entry,
            problem=problem,
        )
    return _("• **{category}**: `{entry}` (pattern)", category=rule.category, entry=rule.entry)


class ModerationAdmin:
    """The ``admin.moderation`` command (see the module docstring)."""

    commands = frozenset({"admin.moderation"})
    actions: ClassVar[Mapping[str, RefKind]] = {}
    work: ClassVar[Mapping[str, Work]] = {}

    def __init__(
        self,
        settings: ModerationSettings,
        store: ModerationStore,
        outbox: Outbox,
        audit: AuditTrail,
    ) -> None:
        self.settings = settings
        self.store = store
        self.outbox = outbox
        self.audit = audit

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """Add, remove or list the workspace's rules, ban or unban a user; the answer is
        private."""
        text = await self.perform(event.user, event.place, options)
        await self.outbox.write(event.place, Notice(event, text), WritePolicy.NOW)

    async def perform(self, user: User, place: Place, options: Mapping[str, OptionValue]) -> str:
        """Do what ``options`` ask (as ``/admin moderation`` reads them) for ``user`` in
        ``place``, recording each change; what to tell them. The admin page calls this too."""
        if not user.is_admin:
            raise UserError(_(ADMINS_ONLY))
        if place.is_dm:
            raise UserError(_(IN_A_CHANNEL, moderation=named("admin.moderation")))
        action, entry = action_and_entry(options)
        platform, workspace = place.platform, place.workspace_id
        if action == "add":
            rule = new_rule(options, entry)
            if not await self.store.add_rule(platform, workspace, rule, user.id):
                return _("`{entry}` is already one of this workspace's rules.", entry=entry)
            after = {"category": rule.category, "pattern": rule.pattern}
            await self.audit.record("moderation.rule_added", place, user.id, entry, after=after)
            if rule.pattern:
                return _(
                    "Added the pattern `{entry}` to **{category}**: prompts and chat messages "
                    "matching it are refused in this workspace.",
                    entry=entry,
                    category=rule.category,
                )
            return _(
                "Added the word `{entry}` to **{category}**: prompts and chat messages "
                "matching it are refused in this workspace.",
                entry=entry,
                category=rule.category,
            )
        if action in ("ban", "unban"):
            banned = banned_user(entry, action)
            if action == "ban":
                await self._bannable(user, place, banned, mentioned=entry.startswith("<@"))
                return await self._ban(user, place, banned, ban_minutes(options, self.settings))
            return await self._unban(user, place, banned)
        if action == "remove":
            before = [r for r in await self.store.rules(platform, workspace) if r.entry == entry]
            if not await self.store.remove_rule(platform, workspace, entry):
                return _("`{entry}` is not a rule of this workspace.", entry=entry)
            states = [{"category": r.category, "pattern": r.pattern} for r in before]
            await self.audit.record("moderation.rule_removed", place, user.id, entry, before=states)
            return _("Removed `{entry}`.", entry=entry)
        return await self._listing(platform, workspace)

    async def _bannable(self, user: User, place: Place, banned: str, mentioned: bool) -> None:
        """Refuse a ban of the admin themself, and one of an id (not a mention) genbot has not
        seen in this workspace: a typo would ban nobody. A mention names a user the platform
        knows, who may not have used genbot yet."""
        if banned == user.id:
            raise UserError(_("You cannot ban yourself."))
        if not mentioned and not await self.store.has_seen(
            place.platform, place.workspace_id, banned
        ):
            raise UserError(
                sentences(
                    _("genbot has not seen `{user}` in this workspace.", user=banned),
                    _(
                        "Check the id, or mention them to ban someone who has not used genbot "
                        "yet: {example}.",
                        example=written("admin.moderation", "ban <@user>"),
                    ),
                )
            )

    async def _ban(self, user: User, place: Place, banned: str, minutes: int) -> str:
        before = await self.store.banned_until(place.platform, banned)
        until = await self.store.ban(place.platform, banned, minutes)
        states = {"banned_until": before}, {"banned_until": until, "minutes": minutes}
        await self.audit.record(
            "moderation.banned", place, user.id, banned, before=states[0], after=states[1]
        )
        ends = format_moment(until)
        return _(
            "Banned `{user}` until {ends}: genbot takes no prompts from them until then.",
            user=banned,
            ends=ends,
        )

    async def _unban(self, user: User, place: Place, banned: str) -> str:
        before = await self.store.banned_until(place.platform, banned)
        if before is None or not await self.store.lift_ban(place.platform, banned):
            return _("`{user}` is not banned.", user=banned)
        await self.audit.record(
            "moderation.unbanned",
            place,
            user.id,
            banned,
            before={"banned_until": before},
            after={"banned_until": None},
        )
        return _("Lifted the ban of `{user}`.", user=banned)

    async def on_button(self, event: ButtonPress, referent: NoReferent) -> None:
        """It has no buttons."""
        raise UserError(_("This button is no longer supported."))

    async def on_modal(self, event: ModalSubmit, referent: NoReferent) -> None:
        """It has no forms."""
        raise UserError(_("This form is no longer supported."))

    async def _listing(self, platform: str, workspace: str) -> str:
        own = await self.store.rules(platform, workspace)
        lines = [_listed(rule) for rule in own]
        configured = global_rules(self.settings)
        categories = sorted({rule.category for rule in configured})
        head = (
            _("This workspace's moderation rules ({count}):", count=len(own))
            if own
            else _("This workspace has no moderation rules of its own.")
        )
        tail = (
            "\n"
            + ngettext(
                "genbot's configuration adds {n} rule everywhere, in: {categories}.",
                "genbot's configuration adds {n} rules everywhere, in: {categories}.",
                len(configured),
                categories=", ".join(categories),
            )
            if configured
            else ""
        )
        return "\n".join([head, *lines]) + tail
