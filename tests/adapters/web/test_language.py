"""The playground's language: the switch's cookie, else the browser's Accept-Language, else
English; carried by the events of a request, and the page's words served by /api/messages."""

from __future__ import annotations

from aiohttp import ClientSession
from yarl import URL

from adapters.web import WebAdapter
from adapters.web.language import LANGUAGE_COOKIE, accepted, script_messages
from bot.kernel import Button, ButtonPress, Command, OutMessage, Place, UserMessage
from tests.adapters.web.fakes import RecordingCore, post


def test_accept_language_is_read_most_wanted_first() -> None:
    header = "fr-CH, fr;q=0.9, de;q=0.95, *;q=0.5, ja;q=0"
    assert accepted(header) == ["fr-CH", "de", "fr"]
    assert accepted("") == []
    assert accepted("en;q=oops, zh-Hans-CN") == ["zh-Hans-CN"]


async def test_events_speak_the_browsers_language_unless_the_switch_chose_one(
    browser: ClientSession, adapter: WebAdapter, core: RecordingCore
) -> None:
    german = {"Accept-Language": "fr-FR, de-DE;q=0.8, en;q=0.5"}
    await browser.post("/api/command", json={"text": "/help"}, headers=german)
    await browser.post("/api/message", json={"text": "hi"}, headers={"Accept-Language": "pt"})
    browser.cookie_jar.update_cookies({LANGUAGE_COOKIE: "ja"}, URL(adapter.url))
    await browser.post("/api/command", json={"text": "/usage"}, headers=german)
    first, second, third = await core.wait_for_events(3)
    assert isinstance(first, Command) and first.locale == "de"
    assert isinstance(second, UserMessage) and second.locale == "en"
    assert isinstance(third, Command) and third.locale == "ja"
    assert {first.place_locale, second.place_locale, third.place_locale} == {None}


async def test_a_press_carries_the_pressers_language(
    browser: ClientSession, adapter: WebAdapter, core: RecordingCore
) -> None:
    buttons = ((Button("🔄", "reroll", "job-7", "primary"),),)
    place = Place("web", "web", "general")
    ref = await adapter.surface.send(place, OutMessage("grid", buttons=buttons))
    browser.cookie_jar.update_cookies({LANGUAGE_COOKIE: "zh-Hans"}, URL(adapter.url))
    pressed = {"message_id": ref.message_id, "custom_id": "gb:reroll:job-7"}
    status, _ = await post(browser, "/api/button", pressed)
    assert status == 202
    [event] = await core.wait_for_events(1)
    assert isinstance(event, ButtonPress) and event.locale == "zh-Hans"


async def test_the_page_gets_its_words_and_the_switchs_languages(
    browser: ClientSession, adapter: WebAdapter
) -> None:
    answer = await browser.get("/api/messages", headers={"Accept-Language": "de"})
    assert answer.status == 200
    assert "Accept-Language" in answer.headers["Vary"]
    body = await answer.json()
    assert body["language"] == "de"
    assert body["plurals"] == ["one", "other"]
    assert [language["name"] for language in body["languages"]] == [
        "English",
        "Deutsch",
        "日本語",
        "简体中文",
    ]
    assert set(body["messages"]) <= {ids[0] for ids in script_messages()}
    plurals = {ids[0] for ids in script_messages() if len(ids) == 2}
    for message, forms in body["messages"].items():
        assert all(isinstance(form, str) and form for form in forms), message
        assert len(forms) == (2 if message in plurals else 1), message
    browser.cookie_jar.update_cookies({LANGUAGE_COOKIE: "ja"}, URL(adapter.url))
    japanese = await (await browser.get("/api/messages")).json()
    assert (japanese["language"], japanese["plurals"]) == ("ja", ["other"])
