"""The language genbot speaks for an event: the user's for what they alone read, the place's for
what everyone there reads; choices made with ``/settings language`` read from the real settings
store, at most once per user and place while the cache holds them; and the router speaking it
around the event's handling (the language is seen by the feature, and by the error boundary)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import ClassVar

import pytest

from bot.kernel import (
    Command,
    LanguageChoices,
    OptionValue,
    Place,
    Spoken,
    Stored,
    SurfaceRegistry,
    User,
    UserError,
    decide,
    format_bytes,
    format_clock,
    format_date,
    format_duration,
    format_moment,
    format_number,
    language,
    language_name,
    public_language,
    publicly,
    sentences,
    speaking,
    spoken,
)
from bot.outbox import Outbox
from bot.refs import Referent, RefKind, Work
from bot.router import Router
from storage import ScopeSettings, SettingSource, SqliteStore
from tests.fakes.platform import FakePlatform

GUILD = Place("discord", "g1", "c1")
DM = Place("discord", "", "d1", is_dm=True)
ALICE = User("alice")


def command(
    place: Place = GUILD, *, locale: str | None = None, place_locale: str | None = None
) -> Command:
    return Command(
        user=ALICE,
        place=place,
        name="imagine",
        text="a fox",
        locale=locale,
        place_locale=place_locale,
    )


def test_private_answers_follow_the_user_and_public_messages_the_place() -> None:
    event = command(locale="de", place_locale="ja")
    assert decide(event) == Spoken(private="de", public="ja")


def test_platform_tags_are_mapped_and_unknown_languages_fall_back() -> None:
    assert decide(command(locale="zh-CN", place_locale="en-US")) == Spoken("zh-Hans", "en")
    assert decide(command(locale="pt-BR")) == Spoken("en", "en")
    assert decide(command(locale="fr", place_locale="de")) == Spoken("de", "de")


def test_a_place_without_a_language_reads_the_askers_and_a_dm_is_private() -> None:
    assert decide(command(locale="ja-JP")) == Spoken("ja", "ja")
    assert decide(command(DM, locale="de", place_locale="ja")) == Spoken("de", "de")


def test_choices_win_over_what_the_platform_says() -> None:
    event = command(locale="de", place_locale="en-US")
    assert decide(event, Stored(user="ja")) == Spoken("ja", "en")
    assert decide(event, Stored(workspace="zh-Hans")) == Spoken("de", "zh-Hans")
    assert decide(event, Stored(channel="de", workspace="ja")) == Spoken("de", "de")
    assert decide(command(), Stored(channel="ja")) == Spoken("ja", "ja")
    assert decide(event, Stored(user="xx")) == Spoken("de", "en")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = await SqliteStore.open(tmp_path / "genbot.db")
    yield store
    await store.close()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_choices_are_read_from_the_settings_and_cached(store: SqliteStore) -> None:
    monotonic = Clock()
    choices = LanguageChoices(store.settings, monotonic=monotonic, cache_seconds=60)
    event = command()
    assert await choices.stored(event) == Stored()
    await store.settings.set_scope_settings("user", "discord", "alice", language="de")
    await store.settings.set_scope_settings("channel", "discord", "c1", language="ja")
    await store.settings.set_scope_settings("workspace", "discord", "g1", language="zh-Hans")
    assert await choices.stored(event) == Stored(), "cached"
    monotonic.now += 60
    assert await choices.stored(event) == Stored("de", "ja", "zh-Hans")
    await store.settings.set_scope_settings("user", "discord", "alice", language=None)
    choices.forget()
    assert await choices.stored(event) == Stored(None, "ja", "zh-Hans")


class Speaks:
    commands = frozenset({"imagine"})
    actions: ClassVar[Mapping[str, RefKind]] = {}
    work: ClassVar[Mapping[str, Work]] = {}

    def __init__(self) -> None:
        self.heard: list[tuple[str, str]] = []

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        self.heard.append((language(), public_language()))
        raise UserError(f"refused in {language()}")

    async def on_button(self, event: object, referent: Referent) -> None: ...

    async def on_modal(self, event: object, referent: Referent) -> None: ...


async def test_the_router_speaks_the_events_languages(store: SqliteStore) -> None:
    platform, feature = FakePlatform(), Speaks()
    platform_place = Place("fake", "w", "c")
    core = Router(
        Outbox(SurfaceRegistry([platform])),
        [feature],
        languages=LanguageChoices(store.settings),
    )
    await store.settings.set_scope_settings("channel", "fake", "c", language="ja")
    await core.handle(command(platform_place, locale="de-DE"))
    await core.handle(command(platform_place))
    assert feature.heard == [("de", "ja"), ("ja", "ja")]
    assert platform.ephemerals_for("alice") == ["refused in de", "refused in ja"]
    assert language() == "en"


MOMENT = 1796000000.0
"""2026-11-30 00:53:20 UTC."""


def test_english_keeps_genbots_formats_and_other_languages_get_theirs() -> None:
    with speaking("en"):
        assert format_number(1234.5) == "1,234.5"
        assert format_number(4294967295, grouping=False) == "4294967295"
        assert format_moment(MOMENT) == "2026-11-30 00:53 UTC"
        assert format_date(MOMENT) == "2026-11-30"
        assert format_clock(MOMENT) == "00:53 UTC"
        assert (format_duration(42), format_duration(185)) == ("42 s", "3 min 5 s")
        sizes = (10, 300 * 1024, 3 * 1024 * 1024 // 2, 8 * 1024 * 1024)
        assert [format_bytes(n) for n in sizes] == ["10 B", "300 KiB", "1.5 MiB", "8 MiB"]
    with speaking("de"):
        assert format_bytes(3 * 1024 * 1024 // 2) == "1,5 MiB"
        assert format_number(1234.5) == "1.234,5"
        assert format_number(7.5, grouping=False) == "7,5"
        assert format_moment(MOMENT) == "30. Nov. 2026, 00:53 UTC"
        assert format_date(MOMENT) == "30. Nov. 2026"
        assert format_duration(185) == "3 Min., 5 Sek."
    with speaking("ja"):
        assert format_date(MOMENT) == "2026年11月30日"
        assert format_duration(42) == "42 秒"
    with speaking("zh-Hans"):
        assert format_duration(185) == "3分钟5秒"
        assert format_clock(MOMENT) == "00:53 UTC"


def test_a_public_message_speaks_the_places_language() -> None:
    with speaking("de", public="ja"):
        assert (language(), public_language()) == ("de", "ja")
        with publicly():
            assert language() == "ja"
        assert language() == "de"
    with speaking("de"):
        assert public_language() == "de"
    assert [language_name(tag) for tag in ("en", "de", "ja", "zh-Hans")] == [
        "English",
        "Deutsch",
        "日本語",
        "简体中文",
    ]


def test_the_languages_set_alone_speak_as_an_event_with_no_locale_would() -> None:
    """An answer settled after its process ended has no event: the languages set in its scopes
    decide, by the same rules (the user's privately; the channel's, else the workspace's, for
    the place; the user's in a DM)."""
    scopes: dict[SettingSource, ScopeSettings] = {
        "user": ScopeSettings(language="ja"),
        "channel": ScopeSettings(language="de"),
        "workspace": ScopeSettings(language="zh-Hans"),
    }
    stored = Stored.of(scopes)
    assert stored == Stored(user="ja", channel="de", workspace="zh-Hans")
    assert spoken(stored, is_dm=False) == Spoken("ja", "de")
    assert spoken(stored, is_dm=True) == Spoken("ja", "ja")
    assert spoken(Stored.of({"workspace": ScopeSettings(language="de")}), is_dm=False) == Spoken(
        "de", "de"
    )
    for place in (GUILD, DM):
        assert spoken(stored, is_dm=place.is_dm) == decide(command(place), stored)


def test_sentences_are_joined_by_a_space_except_after_full_width_punctuation() -> None:
    assert sentences("Not a date.", "", "Dates look like 2026-12-01.") == (
        "Not a date. Dates look like 2026-12-01."
    )
    assert sentences("日付ではありません。", "日付は…") == "日付ではありません。日付は…"
    assert sentences("不是日期！", "（注）", "x") == "不是日期！（注）x"
