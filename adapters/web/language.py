"""The playground's language: the page's language switch (a cookie, so it lasts and every request
and event stream carries it), else the browser's ``Accept-Language``, else English.

Every request is handled speaking it (:func:`language_middleware`, outermost, so the access
rules' refusals speak it too), the events a request brings carry it (``Event.locale``:
:func:`request_locale`), and the page's own words, the ``t("…")`` and ``tn("…", "…", n)`` of its
scripts, come translated from ``/api/messages`` (:func:`messages`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from html.parser import HTMLParser
from typing import IO, Any

from aiohttp import web
from babel import Locale
from babel.messages.catalog import Catalog
from babel.messages.extract import extract
from babel.messages.mofile import read_mo

from adapters.web.routes import STATIC_DIR
from bot.kernel import LANGUAGES, catalog_file, language_name, speaking, supported

LANGUAGE_COOKIE = "genbot_language"
"""The language the switch chose (a tag of :data:`bot.kernel.LANGUAGES`), set by the page."""
LOCALE = web.RequestKey("genbot_locale", str)
SCRIPT_KEYWORDS: dict[str, Any] = {"t": None, "tn": (1, 2)}
"""The page's translation functions (``static/dom.js``), as ``make messages`` extracts them."""
PLURAL_ORDER = ("zero", "one", "two", "few", "many", "other")
"""CLDR's plural categories in the order gettext numbers a language's forms."""


def accepted(header: str | None) -> list[str]:
    """The languages of an ``Accept-Language`` header, most wanted first (``q=0`` and ``*``
    left out)."""
    ranked: list[tuple[float, int, str]] = []
    for position, part in enumerate((header or "").split(",")):
        tag, _, parameters = part.strip().partition(";")
        quality = 1.0
        for parameter in parameters.split(";"):
            name, _, value = parameter.strip().partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if tag.strip() not in ("", "*") and quality > 0:
            ranked.append((-quality, position, tag.strip()))
    return [tag for _, _, tag in sorted(ranked)]


def locale_of(request: web.Request) -> str:
    """The language of ``request``: the switch's, else the first the browser accepts that
    genbot speaks, else English."""
    chosen = supported(request.cookies.get(LANGUAGE_COOKIE))
    if chosen is not None:
        return chosen
    for tag in accepted(request.headers.get("Accept-Language")):
        found = supported(tag)
        if found is not None:
            return found
    return LANGUAGES[0]


def request_locale(request: web.Request) -> str:
    """The language :func:`language_middleware` found for ``request`` (an event's
    ``locale``)."""
    return request.get(LOCALE) or locale_of(request)


@web.middleware
async def language_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """Handle ``request`` speaking its language (:func:`locale_of`)."""
    tag = locale_of(request)
    request[LOCALE] = tag
    with speaking(tag):
        response: web.StreamResponse = await handler(request)
    return response


@cache
def script_messages() -> tuple[tuple[str, ...], ...]:
    """The sentences of the playground's pages: ``(msgid,)`` or ``(singular, plural)``, from its
    scripts (``t("…")``, ``tn("…", "…", n)``) and its HTML (:func:`page_texts`)."""
    found: dict[tuple[str, ...], None] = {}
    for path in sorted(STATIC_DIR.glob("*.js")):
        with path.open("rb") as file:
            for _, message, _, _ in extract("javascript", file, keywords=SCRIPT_KEYWORDS):
                found[message if isinstance(message, tuple) else (message,)] = None
    for path in sorted(STATIC_DIR.glob("*.html")):
        for _, text in page_texts(path.read_text()):
            found[(text,)] = None
    return tuple(found)


TRANSLATED_ATTRIBUTES = {
    "data-t-placeholder": "placeholder",
    "data-t-title": "title",
    "data-t-label": "aria-label",
}
"""The page's markers of translated attributes (static/dom.js ``loadWords``)."""
_MARKED_MARKUP = re.compile(r"<(\w+)\b[^>]*\bdata-t-html\b[^>]*>(.*?)</\1>", re.DOTALL)


class _MarkedTexts(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, str]] = []
        self._open: list[tuple[str, int, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        given = dict(attrs)
        line = self.getpos()[0]
        for marker, attribute in TRANSLATED_ATTRIBUTES.items():
            if marker in given and given.get(attribute):
                self.found.append((line, str(given[attribute])))
        if "data-t" in given:
            self._open.append((tag, line, []))

    def handle_data(self, data: str) -> None:
        for _, _, parts in self._open:
            parts.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1][0] == tag:
            _, line, parts = self._open.pop()
            text = "".join(parts).strip()
            if text:
                self.found.append((line, text))


def page_texts(html: str) -> list[tuple[int, str]]:
    """The words a page's HTML marks for translation, with their lines: the text of
    ``data-t`` elements, the markup of ``data-t-html`` ones, and the attributes of
    :data:`TRANSLATED_ATTRIBUTES`."""
    parser = _MarkedTexts()
    parser.feed(html)
    parser.close()
    marked = [
        (html.count("\n", 0, match.start()) + 1, match.group(2).strip())
        for match in _MARKED_MARKUP.finditer(html)
    ]
    return sorted(parser.found + marked)


def extract_html(
    fileobj: IO[bytes], keywords: Any, comment_tags: Any, options: Any
) -> Iterator[tuple[Any, ...]]:
    """Babel's extraction method for the playground's HTML pages (babel.cfg)."""
    for line, text in page_texts(fileobj.read().decode()):
        yield line, "_", text, []


@cache
def messages(tag: str) -> dict[str, Any]:
    """What ``/api/messages`` answers for language ``tag``: the scripts' sentences translated
    (each as its plural forms; an untranslated one is left out, so the page shows its English),
    the language's plural categories in gettext's order (for the page's ``Intl.PluralRules``),
    and the languages the switch offers."""
    catalog = _compiled(tag)
    rule = Locale.parse(tag.replace("-", "_")).plural_form
    translated: dict[str, list[str]] = {}
    for ids in script_messages():
        found = catalog.get(ids[0]) if catalog is not None else None
        if found is None:
            continue
        string = found.string
        if isinstance(string, tuple | list):
            forms = [str(form or "") for form in string]
        else:
            forms = [str(string or "")]
        if all(forms) and len(forms) == (len(rule.tags | {"other"}) if len(ids) > 1 else 1):
            translated[ids[0]] = forms
    return {
        "language": tag,
        "plurals": [category for category in PLURAL_ORDER if category in rule.tags | {"other"}],
        "messages": translated,
        "languages": [{"tag": known, "name": language_name(known)} for known in LANGUAGES],
    }


def _compiled(tag: str) -> Catalog | None:
    path = catalog_file(tag)
    if tag == LANGUAGES[0] or not path.is_file():
        return None
    with path.open("rb") as file:
        return read_mo(file)


async def page_messages(request: web.Request) -> web.Response:
    """``/api/messages``: the page's words in the request's language (:func:`messages`)."""
    return web.json_response(
        messages(request_locale(request)), headers={"Vary": "Accept-Language, Cookie"}
    )
