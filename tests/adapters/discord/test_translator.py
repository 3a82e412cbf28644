"""Discord's localized commands: the sync sends every command's name and description
localizations from the catalog (discord.py's Translator), every localized name is one Discord
takes (the fake refuses others, as Discord does), and the catalog's command words are valid
Discord names in every language."""

from __future__ import annotations

from collections import Counter

import pytest
from babel.messages.pofile import read_po

from adapters.discord.translator import (
    CHOICE_CONTEXT,
    NAME_CONTEXT,
    OPTION_CONTEXT,
    command_words,
    is_discord_name,
)
from bot.kernel import COMMANDS, LANGUAGES, catalog_file, pgettext, speaking
from tests.adapters.discord.harness import Harness, RecordingCore

OTHERS = [tag for tag in LANGUAGES if tag != "en"]
DISCORD_LOCALE = {"de": "de", "ja": "ja", "zh-Hans": "zh-CN"}


def test_discord_names_are_lowercase_words_of_at_most_32_characters() -> None:
    for name in ("imagine", "bild-erstellen", "画像生成", "生成图片", "हिन्दी", "x_2"):
        assert is_discord_name(name), name
    for name in ("Imagine", "bild erstellen", "", "a" * 33, "imagine!", "what?"):
        assert not is_discord_name(name), name


def test_every_command_word_is_in_the_template() -> None:
    with (catalog_file("de").parents[2] / "genbot.pot").open("rb") as file:
        template = read_po(file)
    missing = [word for word in command_words() if template.get(word[1], context=word[0]) is None]
    assert missing == [], "run `make messages`"


@pytest.mark.parametrize("tag", OTHERS)
def test_the_catalogs_command_words_are_names_discord_takes(tag: str) -> None:
    with catalog_file(tag).with_suffix(".po").open("rb") as file:
        catalog = read_po(file)
    bad = [
        (message.context, message.id, message.string)
        for message in catalog
        if message.context in (NAME_CONTEXT, OPTION_CONTEXT)
        and message.string
        and not is_discord_name(str(message.string))
    ]
    assert bad == []
    with speaking(tag):
        for spec in COMMANDS:
            named = Counter(pgettext(OPTION_CONTEXT, option.name) for option in spec.options)
            assert [name for name, count in named.items() if count > 1] == [], spec.name
        tops = Counter(
            pgettext(NAME_CONTEXT, name) for name in {spec.name.split(".")[0] for spec in COMMANDS}
        )
        assert [name for name, count in tops.items() if count > 1] == []
        assert all(pgettext(CHOICE_CONTEXT, word) for context, word in command_words())


async def test_the_sync_sends_each_commands_localizations(
    harness: Harness, core: RecordingCore
) -> None:
    await harness.start(core, guild_ids=[])
    synced = harness.fake.global_commands
    assert {command["name"] for command in synced} >= {"imagine", "settings", "help"}
    for command in synced:
        assert isinstance(command["name_localizations"], dict), command["name"]
        if command["type"] == 1:
            assert isinstance(command["description_localizations"], dict), command["name"]
    by_name = {command["name"]: command for command in synced}
    for tag in OTHERS:
        locale = DISCORD_LOCALE[tag]
        with speaking(tag):
            for name in ("imagine", "settings", "help"):
                said = pgettext(NAME_CONTEXT, name)
                expected = said if said != name else None
                assert by_name[name]["name_localizations"].get(locale) == expected, name
            settings = by_name["settings"]
            assert (
                by_name["help"]["description_localizations"][locale]
                != by_name["help"]["description"]
            )
            language = next(o for o in settings["options"] if o["name"] == "language")
            assert language["name_localizations"][locale] == pgettext(OPTION_CONTEXT, "language")


async def test_german_discord_shows_german_command_names(
    harness: Harness, core: RecordingCore
) -> None:
    await harness.start(core, guild_ids=[])
    by_name = {command["name"]: command for command in harness.fake.global_commands}
    assert by_name["settings"]["name_localizations"]["de"] == "einstellungen"
    assert by_name["help"]["name_localizations"]["de"] == "hilfe"
    assert "de" not in by_name["imagine"]["name_localizations"], "Midjourney's word stays"
