"""Discord's localized commands: the names, descriptions, option names and choices of genbot's
commands in each language genbot speaks, read from the message catalog when the commands are
synced (:class:`CatalogTranslator`, discord.py's ``app_commands.Translator``); Discord shows each
user the words of their client's language.

Descriptions are sentences of the catalog (marked ``N_`` where the catalogue declares them).
Names and choices are words with their own catalog context (:data:`NAME_CONTEXT`,
:data:`OPTION_CONTEXT`, :data:`CHOICE_CONTEXT`): a command name must be a valid Discord name in
every language (lowercase, no spaces, at most 32 characters: :func:`is_discord_name`), so a
translation that is not one is left out and Discord shows the English name. :func:`extract` puts
these words in the catalog (``make messages``, see babel.cfg), with a note for translators.

Slack has no localized commands: its slash commands and their manifest descriptions stay
English.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from typing import IO, Any

from babel.messages.extract import extract_python
from discord import Locale, app_commands

from bot.kernel import COMMANDS, LANGUAGES, _, language_name, pgettext, speaking, supported

NAME_CONTEXT = "Discord command name"
OPTION_CONTEXT = "Discord option name"
CHOICE_CONTEXT = "Discord choice"
NAME_NOTE = (
    "Translators: a Discord command or option name, typed after /. Lowercase letters, digits,"
    " - or _ only, no spaces, at most 32 characters; unique among its command's options."
)
CHOICE_NOTE = "Translators: a value offered in a Discord command's option list (100 characters)."
MAX_NAME = 32
MAX_TEXT = 100
_NAMES = (
    app_commands.TranslationContextLocation.command_name,
    app_commands.TranslationContextLocation.group_name,
    app_commands.TranslationContextLocation.parameter_name,
)
_SCRIPTS_WITH_MARKS = ((0x0900, 0x097F), (0x0E00, 0x0E7F))
"""Devanagari and Thai, whose combining marks Discord's name pattern allows."""


def is_discord_name(text: str) -> bool:
    """Whether ``text`` is a valid command or option name for Discord: 1–32 letters, digits,
    ``-`` or ``_`` (Discord's ``^[-_\\p{L}\\p{N}\\p{sc=Deva}\\p{sc=Thai}]{1,32}$``), lowercase
    where the letter has a lowercase form."""
    if not 1 <= len(text) <= MAX_NAME or text != text.lower():
        return False
    return all(_name_character(character) for character in text)


def _name_character(character: str) -> bool:
    if character in "-_" or unicodedata.category(character)[0] in "LN":
        return True
    code = ord(character)
    return any(low <= code <= high for low, high in _SCRIPTS_WITH_MARKS)


class CatalogTranslator(app_commands.Translator):
    """The catalog's words for Discord's locales (``None``, Discord's English, where the
    catalog has none, or none valid)."""

    async def translate(
        self,
        string: app_commands.locale_str,
        locale: Locale,
        context: app_commands.TranslationContextTypes,
    ) -> str | None:
        tag = supported(locale.value)
        if tag is None or tag == LANGUAGES[0]:
            return None
        english = string.message
        with speaking(tag):
            said = self._said(english, context)
        return said if said is not None and said != english else None

    @staticmethod
    def _said(english: str, context: app_commands.TranslationContextTypes) -> str | None:
        location = context.location
        if location in _NAMES and not isinstance(context.data, app_commands.ContextMenu):
            word_context = (
                OPTION_CONTEXT
                if location is app_commands.TranslationContextLocation.parameter_name
                else NAME_CONTEXT
            )
            name = pgettext(word_context, english)
            return name if is_discord_name(name) else None
        if location is app_commands.TranslationContextLocation.choice_name:
            return pgettext(CHOICE_CONTEXT, english)[:MAX_TEXT]
        text = _(english)
        return text[:MAX_NAME] if location in _NAMES else text[:MAX_TEXT]


def command_words() -> Iterator[tuple[str, str]]:
    """Every (context, word) Discord shows of genbot's commands: command and group names,
    option names, and the choices of options without autocomplete (the language picker's
    languages are their own names, shown as they are)."""
    seen: dict[tuple[str, str], None] = {}
    for spec in COMMANDS:
        for part in spec.name.split("."):
            seen[(NAME_CONTEXT, part)] = None
        for option in spec.options:
            seen[(OPTION_CONTEXT, option.name)] = None
            if not option.choices or option.autocomplete is not None:
                continue
            for choice in option.choices:
                if choice_name(option.name, choice) == choice:
                    seen[(CHOICE_CONTEXT, choice)] = None
    yield from seen


def choice_name(option: str, value: str) -> str:
    """What Discord lists for choice ``value`` of ``option``: the value, or, for the language
    picker, the language's own name."""
    return language_name(value) if option == "language" and value in LANGUAGES else value


def extract(
    fileobj: IO[bytes], keywords: Any, comment_tags: Any, options: Any
) -> Iterator[tuple[Any, ...]]:
    """Babel's extraction method for this file (babel.cfg): its own sentences, and the words of
    :func:`command_words` as ``pgettext`` entries with a note for translators."""
    yield from extract_python(fileobj, keywords, comment_tags, options)
    for context, word in command_words():
        note = NAME_NOTE if context != CHOICE_CONTEXT else CHOICE_NOTE
        yield 0, "pgettext", (context, word), [note]
