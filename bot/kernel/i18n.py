"""The language genbot speaks to a user: message catalogs, plural forms, locale formatting.

Every user-facing sentence goes through :func:`_` (or :func:`ngettext` when it counts
something). The language is the one of the event being handled: the router (or whatever runs a
job's delivery) sets it with :func:`speaking`, and code below it only calls :func:`_`. Values go
in as keywords and fill ``{name}`` fields *after* translation, so a translator can move them::

    _("Upscaled image {index} of {total}.", index=2, total=4)
    ngettext("{n} image", "{n} images", count)

Numbers, sizes, shares, moments and durations shown to users go through
:func:`format_number`, :func:`format_bytes`, :func:`format_percent`, :func:`format_moment`,
:func:`format_date`, :func:`format_clock` and :func:`format_duration` (English keeps genbot's own
formats, byte for byte; other languages get CLDR's through Babel). A message everyone in a place
reads (a grid in a channel) is built inside :func:`publicly`, which speaks the place's language
rather than the user's.

**Which language an event speaks.** The router decides, once per event (:func:`decide`), and
speaks it around the event's handling:

- *private* (ephemeral answers, DMs, a user's home, forms): the user's own choice
  (``/settings language``), else their platform's locale (Discord's interaction ``locale``,
  Slack's user locale, the browser's language or the playground's switch), else the place's
  language, else English;
- *public* (a job's messages in a channel, which others read and press): the channel's language
  (``/settings language`` with ``scope channel``, admins), else the workspace's (``scope
  workspace``), else the platform's language of the place (a Discord guild's
  ``preferred_locale``), else the private language: in a DM, and in a place whose language
  nobody set (a Slack channel), the one who asked is the reader genbot knows.

A job stores the public language it was asked in (its parameters), so its result, delivered
later by the tracker (or after a restart), speaks the language chosen at submission.

A sentence written once at import time (a constant, a button label table) is marked with
:func:`N_` so extraction finds it, and translated where it is used: ``_(LABEL)``.

Catalogs are gettext ``.po`` files under ``bot/locales/<language>/LC_MESSAGES/genbot.po``,
extracted with ``pybabel extract`` (see ``babel.cfg``) and compiled to ``.mo`` by the Makefile.
Logs stay English: never pass a log line through :func:`_`.
"""

from __future__ import annotations

import gettext
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from babel import Locale
from babel.dates import format_skeleton
from babel.lists import format_list
from babel.numbers import format_decimal
from babel.numbers import format_percent as format_percent_babel
from babel.units import format_unit

from bot.kernel.command_names import PLACE_NAMES, CommandNames
from bot.kernel.events import Event
from storage import ScopeSettings, SettingSource, SettingsReader

DEFAULT_LANGUAGE = "en"
LANGUAGES: tuple[str, ...] = ("en", "de", "ja", "zh-Hans")
"""The languages genbot speaks, as BCP 47 tags; the first is the source language."""
DOMAIN = "genbot"
LOCALES = Path(__file__).resolve().parent.parent / "locales"

_language: ContextVar[str] = ContextVar("genbot_language", default=DEFAULT_LANGUAGE)
_public: ContextVar[str | None] = ContextVar("genbot_public_language", default=None)


def language() -> str:
    """The language of the event being handled (a tag of :data:`LANGUAGES`)."""
    return _language.get()


def public_language() -> str:
    """The language of the messages everyone in the event's place reads (a grid posted in a
    channel): the place's language when the router knows one, else :func:`language`."""
    return _public.get() or _language.get()


@contextmanager
def speaking(
    tag: str, *, public: str | None = None, names: Callable[[], CommandNames] | None = None
) -> Iterator[None]:
    """Speak ``tag`` (a supported language) in this block and in the tasks it starts;
    ``public`` is the language of what everyone in the place reads (default: ``tag``).
    ``names`` says how the place's platform names genbot's commands (a Discord mention shows in
    the reader's language): asked only when a text names one (:mod:`bot.kernel.command_names`);
    without it, the enclosing block's stands."""
    token = _language.set(tag if tag in LANGUAGES else DEFAULT_LANGUAGE)
    public_token = _public.set(public if public in LANGUAGES else None)
    names_token = None if names is None else PLACE_NAMES.set(names)
    try:
        yield
    finally:
        if names_token is not None:
            PLACE_NAMES.reset(names_token)
        _public.reset(public_token)
        _language.reset(token)


@contextmanager
def publicly() -> Iterator[None]:
    """Speak :func:`public_language` in this block: around building a message posted for
    everyone in the place (a job's message in a channel), whose words are not the presser's.
    Private answers (ephemeral, in a DM) stay in :func:`language`."""
    with speaking(public_language()):
        yield


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


def catalog_file(tag: str) -> Path:
    """The compiled catalog (``.mo``) genbot reads for language ``tag`` (absent for English,
    the source language, and before ``make catalogs``)."""
    return LOCALES / catalog_name(tag) / "LC_MESSAGES" / f"{DOMAIN}.mo"


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


def pgettext(context: str, message: str, /) -> str:
    """``message`` in the current language, as translated in ``context`` (a word whose
    translation depends on where it stands: a Discord command name is not a sentence)."""
    return _translations(_language.get()).pgettext(context, message)


def sentences(*texts: str) -> str:
    """``texts`` (each a sentence or more, in the current language) as one paragraph: a space
    between two, except after full-width punctuation (``。``, ``！``, ``）``), after which Japanese
    and Chinese write none. Empty texts are left out."""
    joined = ""
    for text in texts:
        if not text:
            continue
        if joined and not _full_width_stop(joined[-1]):
            joined += " "
        joined += text
    return joined


def _full_width_stop(character: str) -> bool:
    return unicodedata.category(character).startswith("P") and unicodedata.east_asian_width(
        character
    ) in ("W", "F")


def N_(message: str, /) -> str:
    """Mark ``message`` for extraction without translating it (translate it where it is used)."""
    return message


def language_name(tag: str) -> str:
    """A supported language's name in itself, as a language picker shows it: ``Deutsch``."""
    return AUTONYMS.get(tag, tag)


AUTONYMS: dict[str, str] = {"en": "English", "de": "Deutsch", "ja": "日本語", "zh-Hans": "简体中文"}


def _locale() -> Locale:
    return Locale.parse(catalog_name(_language.get()))


def format_number(value: float, /, *, grouping: bool = True) -> str:
    """``value`` written the current language's way: ``1,234.5`` (English), ``1.234,5``
    (German); without ``grouping``, only the decimal sign is the language's (``1234.5``,
    ``1234,5``: a bound or a seed, written as genbot always did)."""
    return format_decimal(value, locale=_locale(), group_separator=grouping)


def format_bytes(count: int, /) -> str:
    """A size in bytes: in B below a KiB, KiB below a MiB and MiB above, to three significant
    digits with the language's decimal sign: ``300 KiB``, ``1.5 MiB`` (English), ``1,5 MiB``
    (German)."""
    if count < KIB:
        return f"{format_number(count, grouping=False)} B"
    amount, unit = (count / MIB, "MiB") if count >= MIB else (count / KIB, "KiB")
    return f"{format_number(float(format(amount, '.3g')), grouping=False)} {unit}"


KIB = 1024
MIB = KIB * KIB


def format_percent(share: float, /) -> str:
    """A share (0 to 1) as a whole percentage, the language's way: ``75%`` (English),
    ``75 %`` (German)."""
    return format_percent_babel(share, locale=_locale())


def format_moment(at: float, /) -> str:
    """A moment (a UNIX time) in UTC: ``2026-11-29 05:12 UTC`` in English (genbot's format
    since its first release), the language's own date and time elsewhere
    (``29. Nov. 2026, 05:12 UTC``)."""
    moment = datetime.fromtimestamp(at, UTC)
    if _language.get() == DEFAULT_LANGUAGE:
        return moment.strftime("%Y-%m-%d %H:%M UTC")
    locale = _locale()
    day = format_skeleton("yMMMd", moment, locale=locale)
    time = format_skeleton("Hm", moment, locale=locale)
    return f"{str(locale.datetime_formats['medium']).format(time, day)} UTC"


def format_date(at: float, /) -> str:
    """A day (of a UNIX time, in UTC): ``2026-11-29`` in English, ``29. Nov. 2026`` in
    German."""
    moment = datetime.fromtimestamp(at, UTC)
    if _language.get() == DEFAULT_LANGUAGE:
        return moment.strftime("%Y-%m-%d")
    return format_skeleton("yMMMd", moment, locale=_locale())


def format_clock(at: float, /) -> str:
    """The time of day (of a UNIX time) in UTC: ``14:00 UTC``."""
    moment = datetime.fromtimestamp(at, UTC)
    if _language.get() == DEFAULT_LANGUAGE:
        return moment.strftime("%H:%M UTC")
    return f"{format_skeleton('Hm', moment, locale=_locale())} UTC"


def format_duration(seconds: float, /) -> str:
    """A duration in whole seconds: ``42 s``, ``3 min 5 s`` in English; the language's short
    units elsewhere (``3 Min., 5 Sek.``, ``3 分 5 秒``)."""
    whole = max(round(seconds), 0)
    minutes, rest = divmod(whole, 60)
    if _language.get() == DEFAULT_LANGUAGE:
        return f"{whole} s" if whole < 60 else f"{minutes} min {rest} s"
    locale = _locale()
    second = format_unit(rest, "duration-second", length="short", locale=locale)
    if not minutes:
        return str(second)
    minute = format_unit(minutes, "duration-minute", length="short", locale=locale)
    return format_list([str(minute), str(second)], style="unit-narrow", locale=locale)


AUTO_LANGUAGE = "auto"
"""``/settings language auto``: clear the user's choice (their platform's locale applies)."""
CACHE_SECONDS = 60.0
"""How long a process trusts the stored choices it read (another process's ``/settings
language`` shows here within this; this process's own at once)."""
CACHE_SIZE = 10_000


@dataclass(frozen=True)
class Stored:
    """The languages set with ``/settings language`` that apply to an event (None: unset)."""

    user: str | None = None
    channel: str | None = None
    workspace: str | None = None

    @classmethod
    def of(cls, scopes: Mapping[SettingSource, ScopeSettings]) -> Stored:
        """The languages set in ``scopes`` (the settings store's, by ``user``, ``channel`` and
        ``workspace``)."""
        chosen = {kind: settings.language for kind, settings in scopes.items()}
        return cls(chosen.get("user"), chosen.get("channel"), chosen.get("workspace"))


@dataclass(frozen=True)
class Spoken:
    """The languages of an event: ``private`` for what only its user reads, ``public`` for
    what everyone in its place reads."""

    private: str
    public: str


def decide(event: Event, stored: Stored = Stored()) -> Spoken:
    """The languages genbot speaks for ``event`` (the rules of the module docstring:
    "Which language an event speaks")."""
    return spoken(
        stored, is_dm=event.place.is_dm, locale=event.locale, place_locale=event.place_locale
    )


def spoken(
    stored: Stored,
    *,
    is_dm: bool,
    locale: str | None = None,
    place_locale: str | None = None,
) -> Spoken:
    """The languages genbot speaks to a user in a place: :func:`decide`'s rules from the
    languages ``stored`` and what the platform says of the user's (``locale``) and the
    place's (``place_locale``) where it says; without an event, for an answer settled later."""
    place = (
        _known(stored.channel)
        or _known(stored.workspace)
        or (None if is_dm else supported(place_locale))
    )
    private = _known(stored.user) or supported(locale) or place or DEFAULT_LANGUAGE
    public = private if is_dm else place or private
    return Spoken(private, public)


def _known(tag: str | None) -> str | None:
    return tag if tag in LANGUAGES else None


class LanguageChoices:
    """The languages set with ``/settings language``, read from the settings store with a
    bounded cache (one query per user and place per ``cache_seconds`` at most)."""

    def __init__(
        self,
        settings: SettingsReader,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        cache_seconds: float = CACHE_SECONDS,
    ) -> None:
        self.settings = settings
        self.monotonic = monotonic
        self.cache_seconds = cache_seconds
        self._cache: dict[tuple[str, str, str, str], tuple[float, Stored]] = {}

    async def stored(self, event: Event) -> Stored:
        """The choices that apply to ``event``'s user and place."""
        place = event.place
        key = (place.platform, event.user.id, place.channel_id, place.workspace_id)
        now = self.monotonic()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        scopes = await self.settings.scopes(
            place.platform,
            user_id=event.user.id,
            channel_id=place.channel_id,
            workspace_id=place.workspace_id,
        )
        found = Stored.of(scopes)
        self._cache.pop(key, None)
        self._cache[key] = (now + self.cache_seconds, found)
        while len(self._cache) > CACHE_SIZE:
            del self._cache[next(iter(self._cache))]
        return found

    def forget(self) -> None:
        """Drop what was read: a choice changed (``/settings language``)."""
        self._cache.clear()
