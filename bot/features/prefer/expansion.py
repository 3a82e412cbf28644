"""The router's expansion of prompts (:class:`bot.router.Expands`): a user's saved options
(``--neon``) and suffix put into the prompt of a command that :attr:`expands
<bot.kernel.CommandSpec.expands>`, before it is parsed (see :mod:`bot.kernel.expansion`).

Options saved for the channel win over those saved for everywhere; so does the channel's
suffix. What the user types wins over the suffix: its options already set by the prompt, or by
a typed option (Discord's ``aspect_ratio``), are left out, and a prompt with nothing visible
gets no suffix (it is refused as typed; :func:`bot.kernel.with_suffix`). A text command is
expanded as a whole (a saved ``--ar 16:9`` becomes the aspect ratio); a command with typed
options (Discord) in its prompt. A prompt typed in a form (Remix, Custom Zoom, Vary (Region), Use
as reference, a describe pick) is expanded as ``/imagine``'s prompt option is
(:meth:`SavedExpansion.spliced`; :mod:`bot.features.jobs.form_prompts`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from bot.kernel import COMMANDS_BY_NAME, Command, Event, Spliced, splice, with_suffix
from storage import Preferences, SavedOption

IMAGINE: Final = COMMANDS_BY_NAME["imagine"]
"""The command whose prompt a form's prompt is read as."""
SUFFIX_KEY: Final = "+suffix"
"""The suffix is kept as a saved option of this name (no option name can start with ``+``)."""


def applying(options: list[SavedOption]) -> dict[str, str]:
    """The text of each name in ``options`` (a channel's over everywhere's)."""
    found: dict[str, str] = {}
    for option in sorted(options, key=lambda o: o.channel_id != ""):
        found[option.name] = option.text
    return found


class SavedExpansion:
    """Puts a user's saved options and suffix into their prompts."""

    def __init__(self, store: Preferences) -> None:
        self._store = store

    async def names(self, platform: str, user_id: str, channel_id: str) -> tuple[str, ...]:
        """The names of the user's saved options that apply in ``channel_id``."""
        saved = applying(await self._store.options(platform, user_id, channel_id))
        return tuple(sorted(name for name in saved if name != SUFFIX_KEY))

    async def spliced(self, event: Event, prompt: str, *, suffix: bool) -> Spliced:
        """``prompt``, typed in a form of ``event``'s, as ``/imagine``'s prompt option is
        expanded: the user's saved options put in (:class:`~bot.kernel.CommandError` for a
        ``--word`` that is none) and, with ``suffix`` (a form that writes a new prompt, not one
        that edits a prompt which has its suffix already), their suffix appended."""
        place = event.place
        saved = applying(await self._store.options(place.platform, event.user.id, place.channel_id))
        added = saved.pop(SUFFIX_KEY, "")
        spliced = splice(prompt, saved, IMAGINE)
        if not suffix:
            return spliced
        return replace(spliced, text=with_suffix(spliced.text, added, IMAGINE))

    async def expand(self, event: Command) -> tuple[Command, tuple[tuple[str, str], ...]]:
        """``event`` with its user's saved options and suffix put in, and which saved options
        were (name, text); :class:`~bot.kernel.CommandError` for a ``--word`` that is none."""
        spec = COMMANDS_BY_NAME[event.name]
        place = event.place
        saved = applying(await self._store.options(place.platform, event.user.id, place.channel_id))
        suffix = saved.pop(SUFFIX_KEY, "")
        if event.options:
            prompt = event.options.get(spec.free_text or "prompt")
            if not isinstance(prompt, str):
                return event, ()
            spliced = splice(prompt, saved, spec)
            free = spec.free_text or "prompt"
            given = [name for name, value in event.options.items() if name != free and value != ""]
            options = {**event.options, free: with_suffix(spliced.text, suffix, spec, given)}
            return replace(event, options=options), spliced.used
        if not event.text.strip():
            return event, ()
        spliced = splice(event.text, saved, spec)
        return replace(event, text=with_suffix(spliced.text, suffix, spec)), spliced.used
