"""A prompt typed in a form, read exactly as ``/imagine``'s prompt is.

Remix, Custom Zoom, Vary (Region), Use as reference and a describe pick's form (on every
platform, the playground's drawn forms too) each take a prompt, and each reads it as the prompt
option of ``/imagine`` is read (Discord's, where the ``--flags`` stay in the prompt the provider
gets):

1. the user's saved options put in (``--neon``) and a ``--word`` that is none refused, as the
   router's expansion does (:meth:`bot.features.prefer.SavedExpansion.spliced`); the
   ``/prefer suffix`` is appended to a form that writes a new prompt (Use as reference, a
   describe pick), not to one that edits the prompt of an image, which has its suffix already;
2. checked as the option is (:func:`bot.kernel.validate_options`: control characters, nothing
   visible before its parameters);
3. ``{a, b}`` choices expanded (:func:`bot.kernel.expansion`, an aspect ratio among them
   refused): a form starts one job, so choices that make several distinct prompts, and
   ``--repeat`` above 1, are refused saying so (``/imagine`` runs several);
4. its references read (:func:`bot.kernel.read_references`: weights, counts, ``#N``) and its
   parameters checked (:func:`~bot.features.jobs.input_checks.check_prompt`);
5. screened by the moderation rules (the router screened the prompt its ``{…}`` choices
   make, as it screens a form of :data:`bot.kernel.PROMPT_FORMS`; a saved option put in is
   screened here, as the router screens an expanded command: the one prompt sent, as it is).

Steps 2–4 need no I/O (:func:`read_form_prompt`: a feature's ``check_modal``, so the form shows
the problem beside the field); :meth:`FormPrompts.read` does them all. Every refusal is a
:class:`~bot.kernel.FormError` on the prompt field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from bot.features.jobs.forms import PROMPT_FIELD
from bot.features.jobs.input_checks import check_prompt
from bot.kernel import (
    MOST_EXPANDED,
    ButtonPress,
    CommandError,
    Event,
    FormError,
    ModalSubmit,
    OptionValue,
    Reference,
    Spliced,
    _,
    command,
    expands_prompt,
    expansion,
    name_the_saved,
    named,
    ngettext,
    permutation_count,
    read_references,
    refuse_permuted_aspect,
    take_repeat,
    validate_options,
    written_literally,
)


class SavedOptions(Protocol):
    """What puts a user's saved options (and suffix) into a prompt
    (:class:`bot.features.prefer.SavedExpansion`)."""

    async def spliced(self, event: Event, prompt: str, *, suffix: bool) -> Spliced:
        """``prompt`` with ``event``'s user's saved options put in (their suffix appended
        with ``suffix``); :class:`CommandError` for an unknown ``--word``."""
        ...


class ScreensFormPrompts(Protocol):
    """The moderation rules (the router's screen,
    :class:`bot.features.jobs.prompt_translation.ScreensPrompts`)."""

    async def screen(
        self, event: ModalSubmit | ButtonPress, values: Mapping[str, OptionValue]
    ) -> None:
        """Refuse (:class:`~bot.kernel.UserError`) a prompt that breaks a rule."""
        ...


def _one_prompt(prompt: str) -> str:
    """``prompt``'s ``{…}`` choices read (:func:`bot.kernel.expansion`) into the one prompt a
    form starts."""
    rest, repeat = take_repeat(prompt)
    if repeat is not None and repeat > 1:
        raise CommandError(
            _(
                "A form starts one job, so its prompt takes no --repeat: run {imagine} to "
                "start several.",
                imagine=named("imagine"),
            )
        )
    refuse_permuted_aspect(rest)
    count = permutation_count(rest)
    if 1 < count <= MOST_EXPANDED:
        count = len(expansion(rest, MOST_EXPANDED).prompts)
    if count > 1:
        raise CommandError(
            ngettext(
                "A form starts one job, and these {{…}} choices make {n} prompt: keep one "
                "choice, or run {imagine} to start one job per choice.",
                "A form starts one job, and these {{…}} choices make {n} prompts: keep one "
                "choice, or run {imagine} to start one job per choice.",
                count,
                imagine=named("imagine"),
            )
        )
    return expansion(rest, 1).prompts[0]


def read_form_prompt(prompt: str, *, attached: Sequence[Reference] = ()) -> str:
    """``prompt`` (a form's, saved options already in) read and checked as ``/imagine``'s
    prompt is (steps 2–4 of the module docstring): the one prompt it stands for.
    ``attached``: the references the form adds (Use as reference's image).
    :class:`FormError` on the prompt field says what is wrong."""
    try:
        checked = validate_options(command("imagine"), {"prompt": prompt})
        text = _one_prompt(str(checked.get("prompt", "")))
        read_references(text, attached=attached)
        check_prompt(text)
    except CommandError as error:
        raise FormError(PROMPT_FIELD, str(error)) from None
    return text


class FormPrompts:
    """Reads a form's prompt (see the module docstring); ``saved``: the user's saved options
    (None: none are put in); ``screen``: the moderation rules (None: none)."""

    def __init__(self, saved: SavedOptions | None, screen: ScreensFormPrompts | None) -> None:
        self._saved = saved
        self._screen = screen

    async def read(
        self,
        event: ModalSubmit | ButtonPress,
        prompt: str,
        *,
        new: bool = False,
        attached: Sequence[Reference] = (),
    ) -> str:
        """The prompt ``prompt``, typed in ``event``'s form, stands for; ``new``: the form
        writes a new prompt (the suffix is appended); ``attached``: as for
        :func:`read_form_prompt`. :class:`FormError` (or the screen's
        :class:`~bot.kernel.UserError`) refuses it."""
        spliced = Spliced(prompt)
        if self._saved is not None:
            try:
                spliced = await self._saved.spliced(event, prompt, suffix=new)
            except CommandError as error:
                raise FormError(PROMPT_FIELD, str(error)) from None
        try:
            text = read_form_prompt(spliced.text, attached=attached)
        except FormError as error:
            raise FormError(PROMPT_FIELD, str(name_the_saved(error, spliced.used))) from None
        if self._screen is not None and spliced.text != prompt:
            sent = written_literally(text) if expands_prompt(event) else text
            await self._screen.screen(event, {"prompt": sent})
        return text
