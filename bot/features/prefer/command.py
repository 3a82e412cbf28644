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
    ButtonPress,
    Command,
    CommandError,
    ModalSubmit,
    OptionValue,
    UserError,
    command,
    name_problem,
    parse_command_text,
    splice,
    validate_options,
)
from bot.outbox import Notice, Outbox, WritePolicy
from bot.refs import NoReferent, RefKind
from storage import Preferences, SavedOption

ACTIONS: Final = ("set", "list", "delete")
MAX_SAVED_TEXT: Final = 1000
"""The longest text one saved option or the suffix may stand for."""
MAX_SAVED_OPTIONS: Final = 50
"""The most options one user may save (everywhere and per channel together)."""
IMAGINE = command("imagine")
NAME_IT: Final = "Name the option: /prefer option set neon --style raw"


def _text(options: Mapping[str, OptionValue], name: str) -> str:
    value = options.get(name)
    return str(value).strip() if value is not None else ""


def check_saved_text(text: str, what: str) -> str:
    """``text`` when ``/imagine`` could read it (flags and their values as it takes them; no
    other saved option's name); :class:`UserError` saying what is wrong with ``what``."""
    if len(text) > MAX_SAVED_TEXT:
        raise UserError(f"{what} is {len(text)} characters long; at most {MAX_SAVED_TEXT}.")
    try:
        splice(text, {}, IMAGINE)
    except CommandError:
        raise UserError(
            f"{what} uses a --word that is neither an /imagine option nor a parameter genbot "
            "knows (a saved option cannot use another): check its spelling."
        ) from None
    try:
        raw = parse_command_text(IMAGINE, text)
        validate_options(IMAGINE, {**raw, "prompt": "x"}, text_style=True)
    except CommandError as error:
        raise UserError(f"{what}: {error}") from None
    return text


class PreferCommands:
    """The ``prefer.option`` and ``prefer.suffix`` commands (see the module docstring)."""

    commands = frozenset({"prefer.option", "prefer.suffix"})
    actions: ClassVar[Mapping[str, RefKind]] = {}

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
            first, _, value = value.partition(" ")
            action = first.lower() or "list"
            if action not in ACTIONS:
                raise UserError(
                    "Start with set, list or delete: "
                    "`/prefer option set neon --style raw --sref <url>`."
                )
        if not name and action != "list":
            name, _, value = value.strip().partition(" ")
        name, value = name.removeprefix("--").lower(), value.strip()
        channel = event.place.channel_id if options.get("here") else ""
        platform, user = event.place.platform, event.user.id
        if action == "list":
            return await self._listing(event)
        if action == "delete":
            if not await self._store.delete_option(platform, user, name, channel):
                where = " for this channel" if channel else ""
                return f"You have no saved option --{name}{where}. See /prefer option list."
            return f"Deleted --{name}."
        problem = (
            name_problem(name, IMAGINE) if name else "Name the option: /prefer option set neon …"
        )
        if problem is not None:
            raise UserError(problem)
        if not value:
            raise UserError(f"Say what --{name} stands for: /prefer option set {name} --style raw")
        check_saved_text(value, f"--{name}")
        saved = await self._store.options(platform, user, event.place.channel_id)
        mine = {(o.name, o.channel_id) for o in saved if o.name != SUFFIX_KEY}
        if (name, channel) not in mine and len(mine) >= MAX_SAVED_OPTIONS:
            raise UserError(
                f"You have {len(mine)} saved options, the most genbot keeps; delete one."
            )
        await self._store.set_option(platform, user, SavedOption(name, value, channel))
        where = " in this channel" if channel else ""
        return f"Saved: --{name}{where} stands for `{value}` in your /imagine prompts."

    async def _suffix(self, event: Command, value: str, here: bool) -> str:
        platform, user = event.place.platform, event.user.id
        channel = event.place.channel_id if here else ""
        if value == "-":
            removed = await self._store.delete_option(platform, user, SUFFIX_KEY, channel)
            return "Removed your suffix." if removed else "You have no suffix to remove."
        if not value:
            saved = await self._store.options(platform, user, event.place.channel_id)
            suffixes = [o for o in saved if o.name == SUFFIX_KEY]
            if not suffixes:
                return "You have no suffix. Set one: /prefer suffix --ar 16:9 --v 6"
            return "\n".join(
                f"Your suffix{' in this channel' if o.channel_id else ''}: `{o.text}`"
                for o in suffixes
            )
        check_saved_text(value, "The suffix")
        await self._store.set_option(platform, user, SavedOption(SUFFIX_KEY, value, channel))
        where = " in this channel" if channel else ""
        return f"Saved: every /imagine prompt of yours{where} ends with `{value}`."

    async def _listing(self, event: Command) -> str:
        place = event.place
        saved = await self._store.options(place.platform, event.user.id, place.channel_id)
        lines = [
            f"• --{o.name}{' (this channel)' if o.channel_id else ''}: `{o.text}`"
            for o in saved
            if o.name != SUFFIX_KEY
        ]
        if not lines:
            return (
                "You have no saved options. Save one: "
                "`/prefer option set neon --style raw`, then `/imagine a city --neon`."
            )
        return "Your saved options (here):\n" + "\n".join(lines)

    async def on_button(self, event: ButtonPress, referent: NoReferent) -> None:
        """No buttons."""
        raise UserError("This button is no longer supported.")

    async def on_modal(self, event: ModalSubmit, referent: NoReferent) -> None:
        """No forms."""
        raise UserError("This form is no longer supported.")
