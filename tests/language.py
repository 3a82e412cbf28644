"""What genbot says in a language, read from the real catalogs: the end-to-end tests that run in
German compare what users were shown with these, so they follow the translators' wording."""

from __future__ import annotations

from bot.kernel import _, speaking


def said(tag: str, message: str, /, **values: object) -> str:
    """``message`` (a msgid of the catalog) as genbot says it in language ``tag``."""
    with speaking(tag):
        return _(message, **values)


def german(message: str, /, **values: object) -> str:
    """``message`` in German, which must differ from its English (else the test would not tell
    whether German was spoken)."""
    text = said("de", message, **values)
    assert text != said("en", message, **values), f"no German for {message!r}"
    return text
