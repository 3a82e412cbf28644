"""The message catalogs (bot/locales): one per language genbot speaks, with its plural rule; the
compiled .mo files genbot reads are those of the .po files (the Makefile's ``catalogs`` step);
and every sentence of the code is in the template and translated in every language, placeholders
and plural forms intact."""

from __future__ import annotations

import io
import string
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog, Message
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from bot.kernel import LANGUAGES, catalog_file

ROOT = Path(__file__).resolve().parents[2]
NPLURALS = {"de": 2, "ja": 1, "zh-Hans": 1}
"""How many plural forms each language has (CLDR: German one/other; Japanese and Chinese one)."""
KEYWORDS = {
    "_": None,
    "N_": None,
    "ngettext": (1, 2),
    "pgettext": ((1, "c"), 2),
    "t": None,
    "tn": (1, 2),
}
"""What the Makefile's ``messages`` step extracts (its -k options)."""
OTHERS = [tag for tag in LANGUAGES if tag != "en"]


LOCALES = ROOT / "bot" / "locales"


def po_path(tag: str) -> Path:
    return catalog_file(tag).with_suffix(".po")


def catalog_name(tag: str) -> str:
    return tag.replace("-", "_")


def read(path: Path, tag: str | None = None) -> Catalog:
    with path.open("rb") as file:
        return read_po(file, locale=None if tag is None else catalog_name(tag))


def template() -> Catalog:
    return read(LOCALES / "genbot.pot")


def fields(text: str) -> set[str]:
    """The ``{name}`` fields of a sentence; for one that is no format string (its braces are
    literal, as in ``a } without its {``), how many of each brace it has."""
    try:
        return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError:
        return {"{" * text.count("{"), "}" * text.count("}")}


def ids(message: Message) -> tuple[str, ...]:
    given = message.id
    return tuple(str(part) for part in given) if isinstance(given, tuple | list) else (str(given),)


def forms(message: Message) -> tuple[str, ...]:
    given = message.string
    if isinstance(given, tuple | list):
        return tuple(str(form or "") for form in given)
    return (str(given or ""),)


@pytest.mark.parametrize("tag", OTHERS)
def test_each_language_has_a_catalog_with_its_plural_rule(tag: str) -> None:
    catalog = read(po_path(tag), tag)
    assert str(catalog.locale) == catalog_name(tag)
    assert catalog.num_plurals == NPLURALS[tag]
    assert f"nplurals={NPLURALS[tag]};" in catalog.plural_forms
    assert not catalog.fuzzy, "a catalog marked fuzzy is not compiled"


@pytest.mark.parametrize("tag", OTHERS)
def test_genbot_reads_what_the_po_file_says(tag: str) -> None:
    compiled = io.BytesIO()
    write_mo(compiled, read(po_path(tag), tag))
    built = po_path(tag).with_suffix(".mo")
    assert built.is_file(), "run `make catalogs`"
    assert built.read_bytes() == compiled.getvalue(), "stale: run `make catalogs`"


def test_the_template_holds_every_sentence_of_the_code() -> None:
    extracted: set[tuple[str, ...]] = set()
    for _, _, message, _, _ in extract_from_dir(
        str(ROOT), method_map=_method_map(), keywords=KEYWORDS
    ):
        extracted.add(message if isinstance(message, tuple) else (message,))
    in_template = {ids(message) for message in template() if message.id}
    assert extracted - in_template == set(), "run `make messages`"


def _method_map() -> list[tuple[str, str]]:
    lines = (ROOT / "babel.cfg").read_text().splitlines()
    sections = [line.strip("[]").split(": ") for line in lines if line.startswith("[")]
    return [(pattern, method) for method, pattern in sections]


@pytest.mark.parametrize("tag", OTHERS)
def test_every_sentence_is_translated_with_its_placeholders(tag: str) -> None:
    catalog, wants = read(po_path(tag), tag), template()
    missing, broken = [], []
    for wanted in wants:
        if not wanted.id:
            continue
        found = catalog.get(wanted.id, context=wanted.context)
        texts = forms(found) if found is not None else ()
        wanted_forms = catalog.num_plurals if isinstance(wanted.id, tuple | list) else 1
        if found is None or found.fuzzy or len(texts) != wanted_forms or not all(texts):
            missing.append(ids(wanted)[0])
            continue
        singular, *plural = ids(wanted)
        expected = fields(plural[0]) if plural else fields(singular)
        allowed = expected | fields(singular)
        for index, text in enumerate(texts):
            exact = not plural or index > 0 or catalog.num_plurals == 1
            if (fields(text) != expected) if exact else not fields(text) <= allowed:
                broken.append((singular, text))
    assert missing == [], f"{len(missing)} untranslated in {tag}"
    assert broken == [], "placeholders differ"
    stale = [
        ids(message)[0]
        for message in catalog
        if message.id and wants.get(message.id, context=message.context) is None
    ]
    assert stale == [], "run `make messages`"
