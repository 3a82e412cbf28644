"""``/prefer option set|list|delete`` and ``/prefer suffix``: a user's saved options, each
everywhere or (``--here``) in one channel, and the suffix appended to every ``/imagine``
prompt. What is saved is checked as ``/imagine`` would read it, so a typo is refused now, not
at the next prompt; it is checked again each time it is used (:mod:`bot.features.prefer.expansion`).
Answers are private.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Final

from bot.features.prefer.expansion import SUFFIX_KEY
from bot.kernel import (
    N_,
    ButtonPress,
    Command,
    CommandError,
    ModalSubmit,
    OptionValue,
    UserError,
    _,
    command,
    name_problem,
    named,
    ngettext,
    parse_command_text,
    splice,
    validate_options,
    written,
)
from bot.outbox import Notice, Outbox, WritePolicy
from bot.refs import NoReferent, RefKind, Work
from storage import Preferences, SavedOption

ACTIONS: Final = ("set", "list", "delete")
MAX_SAVED_TEXT: Final = 1000
"""The longest text one saved option or the suffix may stand for."""
MAX_SAVED_OPTIONS: Final = 50
"""The most options one user may save (everywhere and per channel together)."""
IMAGINE = command("imagine")
NAME_IT: Final = N_("Name the option: /prefer option set neon --style raw")


def _text(options: Mapping[str, OptionValue], name: str) -> str:
    value = options.get(name)
    return str(value).strip() if value is not None else ""


def check_saved_text(text: str, name: str | None) -> str:
    """``text`` when ``/imagine`` could read it (flags and their values as it takes them; no
    other saved option's name); :class:`UserError` saying what is wrong with the saved option
    ``name`` (None: the suffix)."""
    if len(text) > MAX_SAVED_TEXT:
        raise UserError(
            _(
                "--{name} is {length} characters long; at most {most}.",
                name=name,
                length=len(text),
                most=MAX_SAVED_TEXT,
            )
            if name is not None
            else _(
                "The suffix is {length} characters long; at most {most}.",
                length=len(text),
                most=MAX_SAVED_TEXT,
            )
        )
    try:
        splice(text, {}, IMAGINE)
    except CommandError:
        raise UserError(
            _(
                "--{name} uses a --word that is neither an {imagine} option nor a parameter "
                "genbot knows (a saved option cannot use another): check its spelling.",
                name=name,
                imagine=named("imagine"),
            )
            if name is not None
            else _(
                "The suffix uses a --word that is neither an {imagine} option nor a parameter "
                "genbot knows (a saved option cannot use another): check its spelling.",
                imagine=named("imagine"),
            )
        ) from None
    try:
        raw = parse_command_text(IMAGINE, text)
        validate_options(IMAGINE, {**raw, "prompt": "x"}, text_style=True)
    except CommandError as error:
        raise UserError(
            _("--{name}: {error}", name=name, error=error)
            if name is not None
            else _("The suffix: {error}", error=error)
        ) from None
    return text


class PreferCommands:
    """The ``prefer.option`` and ``prefer.suffix`` commands (see the module docstring)."""

    commands = frozenset({"prefer.option", "prefer.suffix"})
    actions: ClassVar[Mapping[str, RefKind]] = {}
    work: ClassVar[Mapping[str, Work]] = {}

    def __init__(self, store: Preferences, outbox: Outbox) -> None:
        self._store = store
        self._outbox = outbox

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """Set, list or delete a saved option, or show, set or remove the suffix; answered
        privately."""
        if event.name == "prefer.suffix":
            text = await self._suffix(event, _text(options, "value"), bool(options.get("here")))
        else:
            text = await self._option(event, options)
        await self._outbox.write(event.place, Notice(event, text), WritePolicy.NOW)

    async def _option(self, event: Command, options: Mapping[str, OptionValue]) -> str:
        action, name = _text(options, "action").lower(), _text(options, "name")
        value = _text(options, "value")
        if not action:
            first, _space, value = value.partition(" ")
            action = first.lower() or "list"
            if action not in ACTIONS:
                raise UserError(
                    # Translators: set, list and delete are the words the command takes: keep them.
                    _(
                        "Start with set, list or delete: {example}.",
                        example=written("prefer.option", "set neon --style raw --sref <url>"),
                    )
                )
        if not name and action != "list":
            name, _space, value = value.strip().partition(" ")
        name, value = name.removeprefix("--").lower(), value.strip()
        channel = event.place.channel_id if options.get("here") else ""
        platform, user = event.place.platform, event.user.id
        if action == "list":
            return await self._listing(event)
        if action == "delete":
            if not await self._store.delete_option(platform, user, name, channel):
                return (
                    _(
                        "You have no saved option --{name} for this channel. See {list}.",
                        name=name,
                        list=written("prefer.option", "list"),
                    )
                    if channel
                    else _(
                        "You have no saved option --{name}. See {list}.",
                        name=name,
                        list=written("prefer.option", "list"),
                    )
                )
            return _("Deleted --{name}.", name=name)
        problem = (
            name_problem(name, IMAGINE)
            if name
            else _("Name the option: {example}", example=written("prefer.option", "set neon …"))
        )
        if problem is not None:
            raise UserError(problem)
        if not value:
            raise UserError(
                _(
                    "Say what --{name} stands for: {example}",
                    name=name,
                    example=written("prefer.option", f"set {name} --style raw"),
                )
            )
        check_saved_text(value, name)
        saved = await self._store.options(platform, user, event.place.channel_id)
        mine = {(o.name, o.channel_id) for o in saved if o.name != SUFFIX_KEY}
        if (name, channel) not in mine and len(mine) >= MAX_SAVED_OPTIONS:
            raise UserError(
                ngettext(
                    "You have {n} saved option, the most genbot keeps; delete one.",
                    "You have {n} saved options, the most genbot keeps; delete one.",
                    len(mine),
                )
            )
        await self._store.set_option(platform, user, SavedOption(name, value, channel))
        if channel:
            return _(
                "Saved: --{name} in this channel stands for `{value}` in your {imagine} prompts.",
                name=name,
                value=value,
                imagine=named("imagine"),
            )
        return _(
            "Saved: --{name} stands for `{value}` in your {imagine} prompts.",
            name=name,
            value=value,
            imagine=named("imagine"),
        )

    async def _suffix(self, event: Command, value: str, here: bool) -> str:
        platform, user = event.place.platform, event.user.id
        channel = event.place.channel_id if here else ""
        if value == "-":
            removed = await self._store.delete_option(platform, user, SUFFIX_KEY, channel)
            return _("Removed your suffix.") if removed else _("You have no suffix to remove.")
        if not value:
            saved = await self._store.options(platform, user, event.place.channel_id)
            suffixes = [o for o in saved if o.name == SUFFIX_KEY]
            if not suffixes:
                return _(
                    "You have no suffix. Set one: {example}",
                    example=written("prefer.suffix", "--ar 16:9 --v 6"),
                )
            return "\n".join(
                _("Your suffix in this channel: `{text}`", text=o.text)
                if o.channel_id
                else _("Your suffix: `{text}`", text=o.text)
                for o in suffixes
            )
        check_saved_text(value, None)
        await self._store.set_option(platform, user, SavedOption(SUFFIX_KEY, value, channel))
        if channel:
            return _(
                "Saved: every {imagine} prompt of yours in this channel ends with `{value}`.",
                value=value,
                imagine=named("imagine"),
            )
        return _(
            "Saved: every {imagine} prompt of yours ends with `{value}`.",
            value=value,
            imagine=named("imagine"),
        )

    async def _listing(self, event: Command) -> str:
        place = event.place
        saved = await self._store.options(place.platform, event.user.id, place.channel_id)
        lines = [
            _("• --{name} (this channel): `{text}`", name=o.name, text=o.text)
            if o.channel_id
            else f"• --{o.name}: `{o.text}`"
            for o in saved
            if o.name != SUFFIX_KEY
        ]
        if not lines:
            return _(
                "You have no saved options. Save one: {example}, then {then}.",
                example=written("prefer.option", "set neon --style raw"),
                then=written("imagine", "a city --neon"),
            )
        return _("Your saved options (here):\n{lines}", lines="\n".join(lines))

    async def on_button(self, event: ButtonPress, referent: NoReferent) -> None:
        """No buttons."""
        raise UserError(_("This button is no longer supported."))

    async def on_modal(self, event: ModalSubmit, referent: NoReferent) -> None:
        """No forms."""
        raise UserError(_("This form is no longer supported."))
