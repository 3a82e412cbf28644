"""``/admin moderation add|remove|list``: a workspace's own moderation rules, set by its admins,
and ``unban <user>``, which ends a user's running ban (Discord: ``/admin moderation``; Slack:
``/genbot admin moderation``; the playground: ``/admin moderation``). Text platforms give the
action as the first word (``/admin moderation add nude --category nsfw``, ``… add
"decapitat\\w*" --pattern --category gore``, ``… remove nude``, ``… list``, ``… unban <@user
or id>``). Every answer is private; only admins may use it (``User.is_admin``, decided by each
adapter from its settings), in a channel of the workspace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Final

from bot.features.moderation.rules import BadPattern, RuleSet, compile_pattern
from bot.features.moderation.screen import global_rules
from bot.kernel import (
    ButtonPress,
    Command,
    ModalSubmit,
    ModerationSettings,
    OptionValue,
    UserError,
)
from bot.outbox import Notice, Outbox, WritePolicy
from bot.refs import Referent, RefKind
from storage import ModerationRule, ModerationStore

ACTIONS: Final = ("add", "remove", "list", "unban")
DEFAULT_CATEGORY: Final = "blocked"
MAX_CATEGORY = 40
MAX_ENTRY = 200
ADMINS_ONLY: Final = "Only genbot admins can change a workspace's moderation rules."
IN_A_CHANNEL: Final = (
    "Moderation rules belong to a workspace: run /admin moderation in one of its channels."
)


def _text(options: Mapping[str, OptionValue], name: str) -> str:
    value = options.get(name)
    return str(value).strip() if value is not None else ""


def action_and_entry(options: Mapping[str, OptionValue]) -> tuple[str, str]:
    """The action (its option, else the entry's first word) and the entry; ``list`` when
    neither names one."""
    action, entry = _text(options, "action").lower(), _text(options, "entry")
    if not action:
        first, _, rest = entry.partition(" ")
        if first.lower() in ACTIONS:
            action, entry = first.lower(), rest.strip()
    if not action:
        if entry:
            raise UserError(
                f"Start with add, remove or list: `/admin moderation add {entry} --category …`."
            )
        action = "list"
    return action, _unquoted(entry)


def _unquoted(entry: str) -> str:
    for open_, close in (('"', '"'), ("“", "”"), ("'", "'")):
        if len(entry) > 1 and entry.startswith(open_) and entry.endswith(close):
            return entry[1:-1]
    return entry


def banned_user(entry: str) -> str:
    """The user id an ``unban`` names: a mention (``<@123>``, ``<@U1|name>``) or a bare id."""
    user = entry.strip().removeprefix("<@").removesuffix(">").split("|")[0].lstrip("!")
    if not user or " " in user:
        raise UserError("Say whom to unban: `/admin moderation unban <@user or user id>`.")
    return user


def new_rule(options: Mapping[str, OptionValue], entry: str) -> ModerationRule:
    """The rule ``/admin moderation add`` describes; :class:`UserError` for one genbot would
    never match or cannot run."""
    category = _text(options, "category") or DEFAULT_CATEGORY
    pattern = options.get("pattern") is True
    if not entry:
        raise UserError("Say what to add: `/admin moderation add <word or phrase> --category …`.")
    if len(entry) > MAX_ENTRY or len(category) > MAX_CATEGORY:
        raise UserError(
            f"A rule is at most {MAX_ENTRY} characters, its category at most {MAX_CATEGORY}."
        )
    rule = ModerationRule(category, entry, pattern)
    if pattern:
        try:
            compile_pattern(entry)
        except BadPattern as error:
            raise UserError(f"That pattern cannot be used: {error}.") from None
    elif not RuleSet([rule]):
        raise UserError("That rule has no letters or digits left to match once folded.")
    return rule


class ModerationAdmin:
    """The ``admin.moderation`` command (see the module docstring)."""

    commands = frozenset({"admin.moderation"})
    actions: ClassVar[Mapping[str, RefKind]] = {}

    def __init__(
        self, settings: ModerationSettings, store: ModerationStore, outbox: Outbox
    ) -> None:
        self.settings = settings
        self.store = store
        self.outbox = outbox

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """Add, remove or list the workspace's rules; the answer is private."""
        if not event.user.is_admin:
            raise UserError(ADMINS_ONLY)
        if event.place.is_dm:
            raise UserError(IN_A_CHANNEL)
        action, entry = action_and_entry(options)
        platform, workspace = event.place.platform, event.place.workspace_id
        if action == "add":
            rule = new_rule(options, entry)
            added = await self.store.add_rule(platform, workspace, rule, event.user.id)
            kind = "pattern" if rule.pattern else "word"
            text = (
                f"Added the {kind} `{entry}` to **{rule.category}**: prompts and chat messages "
                "matching it are refused in this workspace."
                if added
                else f"`{entry}` is already one of this workspace's rules."
            )
        elif action == "unban":
            user = banned_user(entry)
            lifted = await self.store.lift_ban(platform, user)
            text = f"Lifted the ban of `{user}`." if lifted else f"`{user}` is not banned."
        elif action == "remove":
            removed = await self.store.remove_rule(platform, workspace, entry)
            text = (
                f"Removed `{entry}`." if removed else f"`{entry}` is not a rule of this workspace."
            )
        else:
            text = await self._listing(platform, workspace)
        await self.outbox.write(event.place, Notice(event, text), WritePolicy.NOW)

    async def on_button(self, event: ButtonPress, referent: Referent) -> None:
        """It has no buttons."""
        raise UserError("This button is no longer supported.")

    async def on_modal(self, event: ModalSubmit, referent: Referent) -> None:
        """It has no forms."""
        raise UserError("This form is no longer supported.")

    async def _listing(self, platform: str, workspace: str) -> str:
        own = await self.store.rules(platform, workspace)
        lines = [
            f"• **{rule.category}**: `{rule.entry}`{' (pattern)' if rule.pattern else ''}"
            for rule in own
        ]
        configured = global_rules(self.settings)
        categories = sorted({rule.category for rule in configured})
        head = (
            f"This workspace's moderation rules ({len(own)}):"
            if own
            else "This workspace has no moderation rules of its own."
        )
        tail = (
            f"\ngenbot's configuration adds {len(configured)} rule(s) everywhere, in: "
            f"{', '.join(categories)}."
            if configured
            else ""
        )
        return "\n".join([head, *lines]) + tail
