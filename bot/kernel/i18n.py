"""The language genbot speaks to a user: message catalogs, plural forms, locale formatting.

Every user-facing sentence goes through :func:`_` (or :func:`ngettext` when it counts
something). The language is the one of the event being handled: the router (or whatever runs a
job's delivery) sets it with :func:`speaking`, and code below it only calls :func:`_`. Values go
in as keywords and fill ``{name}`` fields *after* translation, so a translator can move them::

    _("Upscaled image {index} of {total}.", index=2, total=4)
    ngettext("{n} image", "{n} images", count)

A sentence written once at import time (a constant, a button label table) is marked with
:func:`N_` so extraction finds it, and translated where it is used: ``_(LABEL)``.

Catalogs are gettext ``.po`` files under ``bot/locales/<language>/LC_MESSAGES/genbot.po``,
extracted with ``pybabel extract`` (see ``babel.cfg``) and compiled to ``.mo`` by the Makefile.
Logs stay English: never pass a log line through :func:`_`.
"""

from __future__ import annotations

import gettext
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path

DEFAULT_LANGUAGE = "en"
LANGUAGES: tuple[str, ...] = ("en", "de", "ja", "zh-Hans")
"""The languages genbot speaks, as BCP 47 tags; the first is the source language."""
DOMAIN = "genbot"
LOCALES = Path(__file__).resolve().parent.parent / "locales"

_language: ContextVar[str] = ContextVar("genbot_language", default=DEFAULT_LANGUAGE)


def language() -> str:
    """The language of the event being handled (a tag of :data:`LANGUAGES`)."""
    return _language.get()


@contextmanager
def speaking(tag: str) -> Iterator[None]:
    """Speak ``tag`` (a supported language) in this block and in the tasks it starts."""
    token = _language.set(tag if tag in LANGUAGES else DEFAULT_LANGUAGE)
    try:
        yield
    finally:
        _language.reset(token)


def supported(tag: str | None) -> str | None:
    """The supported language a platform's locale tag names, or None.

    Discord sends ``de``, ``ja``, ``zh-CN``; Slack ``de-DE``, ``ja-JP``; browsers
    ``zh-Hans-CN`` or ``zh``. Traditional Chinese (``zh-TW``, ``zh-Hant``) is not Simplified
    Chinese, so it is not matched.
    """
    if not tag:
        return None
    parts = tag.replace("_", "-").lower().split("-")
    if parts[0] == "zh":
        rest = set(parts[1:])
        if rest & {"hant", "tw", "hk", "mo"}:
            return None
        return "zh-Hans"
    for known in LANGUAGES:
        if known.lower() == parts[0]:
            return known
    return None


def catalog_name(tag: str) -> str:
    """The gettext/Babel locale name of a language tag (``zh-Hans`` → ``zh_Hans``)."""
    return tag.replace("-", "_")


@cache
def _translations(tag: str) -> gettext.NullTranslations:
    if tag == DEFAULT_LANGUAGE:
        return gettext.NullTranslations()
    return gettext.translation(
        DOMAIN, localedir=LOCALES, languages=[catalog_name(tag)], fallback=True
    )


def _(message: str, /, **values: object) -> str:
    """``message`` in the current language, with ``values`` filled into its ``{name}`` fields."""
    text = _translations(_language.get()).gettext(message)
    return text.format(**values) if values else text


def ngettext(singular: str, plural: str, n: int, /, **values: object) -> str:
    """The form of ``singular``/``plural`` that the current language uses for ``n``, filled
    with ``n`` and ``values``."""
    text = _translations(_language.get()).ngettext(singular, plural, n)
    return text.format(n=n, **values)


def N_(message: str, /) -> str:
    """Mark ``message`` for extraction without translating it (translate it where it is used)."""
    return message
