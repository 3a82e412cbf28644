"""Commands, messages, button presses and form submissions become the right core events."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession

from adapters.web import WebAdapter, handlers
from bot.kernel import Button, ButtonPress, Command, ModalSubmit, OutMessage, Place, UserMessage
from storage import PlaygroundHistory, SqliteStore
from storage.records.platforms import ImageToSave, MessageToSave
from tests.adapters.web.fakes import RecordingCore, eventually, history, post
from tests.adapters.web.test_journal import browser_of, serving


def web_place(channel: str = "general", thread: str | None = None) -> Place:
    return Place("web", "web", channel, thread, is_dm=channel.startswith("dm-"))


async def test_slash_command_is_sent_raw_and_becomes_a_command(
    browser: ClientSession, core: RecordingCore
) -> None:
    status, answer = await post(
        browser, "/api/command", {"text": "/imagine a fox --ar 16:9 --fast", "channel": "art"}
    )
    assert status == 202
    [event] = await core.wait_for_events(1)
    me = (await history(browser, "art"))["me"]
    assert isinstance(event, Command)
    assert event.name == "imagine"
    assert event.text == "a fox --ar 16:9 --fast"
    assert event.options == {}
    assert event.attachments == {}
    assert event.place == web_place("art")
    assert event.user.id == me["id"] and event.user.name == f"guest {me['id'][-4:]}"
    echo = (await history(browser, "art"))["messages"][0]
    assert echo["id"] == answer["event_id"]
    assert echo["kind"] == "user" and echo["command"] == "imagine"
    assert echo["text"] == "/imagine a fox --ar 16:9 --fast"


@pytest.mark.parametrize(
    ("text", "name", "rest"),
    [
        ("/diffusion txt2img a fox --steps 31", "diffusion.txt2img", "a fox --steps 31"),
        ("/DIFFUSION Upscale --scale 2", "diffusion.upscale", "--scale 2"),
        ("/chat hello   there", "chat", "hello   there"),
        ("/help", "help", ""),
        ("  /usage  ", "usage", ""),
    ],
)
async def test_command_names_and_text(
    browser: ClientSession, core: RecordingCore, text: str, name: str, rest: str
) -> None:
    status, _ = await post(browser, "/api/command", {"text": text})
    assert status == 202
    [event] = await core.wait_for_events(1)
    assert isinstance(event, Command)
    assert (event.name, event.text) == (name, rest)


async def test_plain_message_is_a_dm_style_turn(
    browser: ClientSession, core: RecordingCore
) -> None:
    status, answer = await post(browser, "/api/message", {"text": "hello there", "channel": "lab"})
    assert status == 202
    [event] = await core.wait_for_events(1)
    assert isinstance(event, UserMessage)
    assert event.text == "hello there"
    assert event.message_id == answer["event_id"]
    assert event.place == web_place("lab")
    assert event.attachments == ()
    echo = (await history(browser, "lab"))["messages"][0]
    assert (echo["id"], echo["kind"], echo["text"]) == (event.message_id, "user", "hello there")


async def test_button_press_becomes_a_button_event(
    browser: ClientSession, core: RecordingCore, adapter: WebAdapter
) -> None:
    buttons = ((Button("U1", "upscale1", "job-7"), Button("🔄", "reroll", "job-7", "primary")),)
    ref = await adapter.surface.send(web_place(), OutMessage("grid", buttons=buttons))
    status, answer = await post(
        browser, "/api/button", {"message_id": ref.message_id, "custom_id": "gb:reroll:job-7"}
    )
    assert status == 202 and answer["event_id"]
    [event] = await core.wait_for_events(1)
    assert isinstance(event, ButtonPress)
    assert (event.action, event.ref, event.message_id) == ("reroll", "job-7", ref.message_id)
    assert event.place == web_place()


async def test_a_press_names_a_message_the_playground_shows_and_the_presser_sees(
    browser: ClientSession, core: RecordingCore, adapter: WebAdapter
) -> None:
    forged = {"message_id": "99", "custom_id": "gb:chat_vision:1", "channel": "art"}
    assert await post(browser, "/api/button", forged) == (
        400,
        {"error": "That message is no longer in the playground."},
    )
    someone = await adapter.surface.send(
        web_place("dm-someone"), OutMessage("private", buttons=((Button("U1", "upscale1", "j"),),))
    )
    theirs = {"message_id": someone.message_id, "custom_id": "gb:upscale1:j"}
    assert await post(browser, "/api/button", theirs) == (
        400,
        {"error": "That message is not yours to use."},
    )
    assert core.events == []


async def test_a_disabled_button_cannot_be_pressed(
    browser: ClientSession, core: RecordingCore, adapter: WebAdapter
) -> None:
    """A disabled button (the "1/2" label of a branch, a preview's Run once it ran) is refused
    through the API as the page refuses it, and nothing reaches the core."""
    buttons = (
        (
            Button("‹", "chat_branch", "c1.1"),
            Button("2/2", "chat_branch", "c1.0", disabled=True),
        ),
    )
    ref = await adapter.surface.send(web_place(), OutMessage("answer", buttons=buttons))
    label = {"message_id": ref.message_id, "custom_id": "gb:chat_branch:c1.0"}
    assert await post(browser, "/api/button", label) == (
        400,
        {"error": "That button is turned off: it cannot be pressed."},
    )
    await assert_no_event_before_the_next(browser, core)
    older = {"message_id": ref.message_id, "custom_id": "gb:chat_branch:c1.1"}
    assert (await post(browser, "/api/button", older))[0] == 202
    event = (await core.wait_for_events(2))[1]
    assert isinstance(event, ButtonPress) and (event.action, event.ref) == ("chat_branch", "c1.1")


async def test_modal_opened_by_a_button_is_submitted_as_modal_submit(
    browser: ClientSession, core: RecordingCore, adapter: WebAdapter
) -> None:
    buttons = ((Button("Custom Zoom", "outpaint_custom", "job-9"),),)
    ref = await adapter.surface.send(web_place("art"), OutMessage("upscaled", buttons=buttons))
    body = {"message_id": ref.message_id, "custom_id": "gb:outpaint_custom:job-9"}
    assert (await post(browser, "/api/button", body))[0] == 202
    await core.wait_for_events(1)
    submit = {"custom_id": "gb:outpaint_custom:job-9", "values": {"prompt": "wide", "zoom": "1.5"}}

    for values, error, field in [
        ({"prompt": "wide", "zoom": " "}, "'Zoom' is required.", "zoom"),
        ({"prompt": "wide", "zoom": "1.5", "color": "red"}, "Unknown form field: color.", ""),
        ({"prompt": "wide", "zoom": "1.25555"}, "'Zoom' is longer than 4 characters.", "zoom"),
        ({"prompt": "wide", "zoom": 2}, "'values' must map field ids to strings.", ""),
    ]:
        answer = {"error": error, **({"errors": {field: error}} if field else {})}
        assert await post(browser, "/api/modal", {**submit, "values": values}) == (400, answer)

    status, _ = await post(browser, "/api/modal", submit)
    assert status == 202
    events = await core.wait_for_events(2)
    event = events[1]
    assert isinstance(event, ModalSubmit)
    assert (event.action, event.ref) == ("outpaint_custom", "job-9")
    assert event.values == {"prompt": "wide", "zoom": "1.5", "note": ""}
    assert event.place == web_place("art")
    again = await post(browser, "/api/modal", submit)
    assert again == (
        400,
        {"error": "This form has expired or was already submitted; open it again."},
    )


async def test_a_form_belongs_to_the_user_it_was_opened_for(
    browsers: Any, core: RecordingCore
) -> None:
    owner, stranger = browsers(), browsers()
    assert (await post(owner, "/api/command", {"text": "/settings"}))[0] == 202
    await core.wait_for_events(1)
    submit = {"custom_id": "gb:settings:user", "values": {"prompt": "x", "zoom": "1"}}
    status, answer = await post(stranger, "/api/modal", submit)
    assert status == 400 and "expired" in answer["error"]
    assert (await post(owner, "/api/modal", submit))[0] == 202


BAD_INPUTS: list[tuple[str, Any, str]] = [
    ("/api/command", {"text": ""}, "Empty command"),
    ("/api/command", {"text": "/"}, "Empty command"),
    ("/api/command", {"text": "/ imagine"}, "Empty command"),
    ("/api/command", {"text": "/frobnicate now"}, "Unknown command '/frobnicate'"),
    ("/api/command", {"text": "/diffusion"}, "/diffusion needs a subcommand: txt2img"),
    ("/api/command", {"text": "/diffusion paint a fox"}, "Unknown subcommand '/diffusion paint'"),
    ("/api/command", {"text": "imagine a fox"}, "A command starts with '/'"),
    ("/api/command", {"text": 5}, "'text' must be a string."),
    ("/api/command", {"text": "/chat " + "x" * 4000}, "the playground takes at most 4,000"),
    ("/api/command", {"text": "/help", "channel": "Bad Name!"}, "Invalid channel name"),
    ("/api/command", {"text": "/help", "thread": "nope"}, "There is no thread 'nope'"),
    ("/api/command", {"text": "/describe", "attachments": ["gone"]}, "has expired"),
    ("/api/command", {"text": "/describe", "attachments": "x"}, "must be a list of upload"),
    ("/api/command", [1, 2], "The JSON body must be an object."),
    ("/api/message", {"text": "   "}, "Empty message: type something or attach an image."),
    ("/api/message", {}, "Empty message"),
    ("/api/button", {"message_id": "x", "custom_id": "zz:upscale1:j"}, "not one of genbot's"),
    ("/api/button", {"message_id": "x", "custom_id": "gb:upscale1:j"}, "no longer in the"),
    ("/api/modal", {"custom_id": "gb:outpaint_custom:j", "values": {}}, "has expired"),
]


@pytest.mark.parametrize(("path", "body", "error"), BAD_INPUTS)
async def test_bad_input_is_a_400_with_a_specific_message_and_no_event(
    browser: ClientSession, core: RecordingCore, path: str, body: Any, error: str
) -> None:
    status, answer = await post(browser, path, body)
    assert status == 400
    assert error in answer["error"]
    await assert_no_event_before_the_next(browser, core)


@pytest.mark.parametrize(
    ("raw", "content_type", "error"),
    [
        (b'{"text": "/help"', "application/json", "Malformed JSON: Expecting"),
        (b"\xff\xfe", "application/json", "Malformed JSON"),
        (b"text=/help", "application/x-www-form-urlencoded", "Send a JSON body"),
    ],
)
async def test_malformed_bodies_are_refused(
    browser: ClientSession, core: RecordingCore, raw: bytes, content_type: str, error: str
) -> None:
    headers = {"Content-Type": content_type}
    async with browser.post("/api/command", data=raw, headers=headers) as response:
        assert response.status == 400
        assert error in (await response.json())["error"]
    await assert_no_event_before_the_next(browser, core)


async def test_buttons_not_on_the_message_are_refused(
    browser: ClientSession, core: RecordingCore, adapter: WebAdapter
) -> None:
    ref = await adapter.surface.send(
        web_place(), OutMessage("grid", buttons=((Button("U1", "upscale1", "j"),),))
    )
    for custom_id in ("gb:upscale2:j", "gb:upscale1:other"):
        status, answer = await post(
            browser, "/api/button", {"message_id": ref.message_id, "custom_id": custom_id}
        )
        assert (status, answer) == (400, {"error": "That button is no longer on the message."})
    status, answer = await post(
        browser, "/api/button", {"message_id": ref.message_id, "custom_id": "not-a-custom-id"}
    )
    assert (status, answer) == (400, {"error": "That is not one of genbot's buttons."})
    await assert_no_event_before_the_next(browser, core)


async def test_cross_site_posts_are_refused(browser: ClientSession, core: RecordingCore) -> None:
    async with browser.post(
        "/api/command", json={"text": "/help"}, headers={"Origin": "http://evil.example"}
    ) as response:
        assert response.status == 403
    await assert_no_event_before_the_next(browser, core)


@pytest.mark.parametrize("command", ["/usage", "/chat timeout"])
async def test_handler_failures_reach_the_user_as_an_ephemeral_error_and_the_log(
    browser: ClientSession, core: RecordingCore, caplog: pytest.LogCaptureFixture, command: str
) -> None:
    caplog.set_level(logging.ERROR, logger="bot.router")
    assert (await post(browser, "/api/command", {"text": command}))[0] == 202
    await core.wait_for_events(1)
    body = await wait_for_message(browser, lambda m: m["kind"] == "ephemeral")
    ephemeral = body["messages"][-1]
    assert "Something went wrong on genbot's side (ref " in ephemeral["text"]
    assert "sk-123" not in ephemeral["text"]
    assert ephemeral["reply_to"] == body["messages"][0]["id"]
    assert any("handling Command" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_requests_return_while_the_core_is_still_working(
    browser: ClientSession, core: RecordingCore, adapter: WebAdapter
) -> None:
    status, answer = await post(browser, "/api/command", {"text": "/chat hang"})
    assert status == 202 and answer["event_id"]
    await core.wait_for_events(1)
    assert adapter.running_handlers == 1
    await adapter.cancel_handlers()
    assert adapter.running_handlers == 0


async def test_handler_that_never_finishes_is_bounded_and_reported(
    browser: ClientSession, core: RecordingCore, adapter: WebAdapter
) -> None:
    adapter.handler_timeout = 0.1
    assert (await post(browser, "/api/command", {"text": "/chat hang"}))[0] == 202
    body = await wait_for_message(browser, lambda m: m["kind"] == "ephemeral")
    assert "took too long" in body["messages"][-1]["text"]


async def wait_for_message(browser: ClientSession, predicate: Any) -> dict[str, Any]:
    """Poll history (bounded) until its last message satisfies ``predicate``."""
    async with asyncio.timeout(5):
        while True:
            body = await history(browser)
            if body["messages"] and predicate(body["messages"][-1]):
                return body
            await asyncio.sleep(0.01)


async def assert_no_event_before_the_next(browser: ClientSession, core: RecordingCore) -> None:
    """Events run in order: if the next good command is the first event, nothing came before."""
    assert (await post(browser, "/api/command", {"text": "/chat marker"}))[0] == 202
    events = await core.wait_for_events(1)
    assert isinstance(events[0], Command) and events[0].text == "marker", events


async def channel_post(browser: ClientSession, channel: str) -> tuple[int, dict[str, Any]]:
    return await post(browser, "/api/message", {"text": "hi", "channel": channel})


async def test_one_user_starts_at_most_three_channels(browsers: Any) -> None:
    ann, bob = browsers(), browsers()
    for number in range(3):
        assert (await channel_post(ann, f"ann{number}"))[0] == 202
    status, answer = await channel_post(ann, "ann3")
    assert (status, answer["error"]) == (
        400,
        "You have started 3 channels — the most one person may; post in one of them or in "
        "another channel that exists.",
    )
    assert (await channel_post(ann, "ann1"))[0] == 202
    assert (await channel_post(bob, "ann3"))[0] == 202
    assert (await channel_post(ann, "ann3"))[0] == 202
    assert (await channel_post(ann, "general"))[0] == 202


async def test_users_dms_and_the_default_channels_never_fill_the_shared_channels(
    browsers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """qa2 D1: every user's DM counted among the channels the playground keeps, so users who
    had opened their DMs (or one user posting in new channels) locked everyone else out of
    their own DM."""
    monkeypatch.setattr(handlers, "MAX_CHANNELS", 2)
    users = [browsers() for _ in range(4)]
    for user in users:
        assert (await channel_post(user, (await history(user))["dm"]))[0] == 202
    assert (await channel_post(users[0], "one"))[0] == 202
    assert (await channel_post(users[1], "two"))[0] == 202
    newcomer = browsers()
    status, answer = await channel_post(newcomer, "three")
    assert (status, answer["error"]) == (
        400,
        "The playground keeps at most 2 channels; post in one of them.",
    )
    assert (await channel_post(newcomer, (await history(newcomer))["dm"]))[0] == 202
    for default in ["art", "lab"]:
        assert (await channel_post(newcomer, default))[0] == 202
    assert (await channel_post(newcomer, "two"))[0] == 202


async def test_a_channel_whose_messages_are_all_forgotten_no_longer_counts(
    browsers: Any, adapter: WebAdapter, core: RecordingCore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An admin's ``/forget-me <user>`` of someone who took channels frees them (genbot does
    not answer a message that does not mention it in a channel)."""
    monkeypatch.setattr(handlers, "MAX_CHANNELS", 1)

    async def unanswered(event: Any) -> None:
        core.events.append(event)

    monkeypatch.setattr(core, "handle", unanswered)
    spammer, other = browsers(), browsers()
    assert (await channel_post(spammer, "spam"))[0] == 202
    assert (await channel_post(other, "mine"))[0] == 400
    await adapter.playground.forget_user((await history(spammer))["me"]["id"])
    assert "spam" not in (await history(other))["channels"]
    assert (await channel_post(other, "mine"))[0] == 202


class HeldSaves(PlaygroundHistory):
    """The playground's SQLite history, whose message saves wait until :attr:`gate` opens
    (counted in :attr:`waiting`)."""

    gate: asyncio.Event
    waiting: int

    async def save_playground_message(
        self, message: MessageToSave, images: Sequence[ImageToSave], *, keep: int
    ) -> int:
        self.waiting += 1
        await self.gate.wait()
        return await super().save_playground_message(message, images, keep=keep)


@pytest.mark.parametrize("limit", ["MAX_CHANNELS", "MAX_CHANNELS_PER_USER"])
async def test_two_posts_at_the_same_moment_cannot_both_take_the_last_channel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str
) -> None:
    """The second post is checked while the first one's save is under way: the channel that
    post starts counts already (of the playground's, or of its user's)."""
    monkeypatch.setattr(handlers, limit, 1)
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        stored = store.playground
        held = HeldSaves(stored.db, stored.clock, stored.owner)
        held.gate, held.waiting = asyncio.Event(), 0
        async with (
            serving(held, RecordingCore()) as adapter,
            browser_of(adapter) as ann,
            browser_of(adapter) as bob,
        ):
            second = ann if limit == "MAX_CHANNELS_PER_USER" else bob
            first = asyncio.create_task(channel_post(ann, "spam1"))
            await eventually(lambda: held.waiting == 1)
            racing = asyncio.create_task(channel_post(second, "spam2"))
            await eventually(lambda: racing.done() or held.waiting == 2)
            held.gate.set()
            assert (await first)[0] == 202
            assert (await racing)[0] == 400
            assert "spam2" not in (await history(bob))["channels"]
            await eventually(lambda: adapter.running_handlers == 0)


FORM_CLOSED = (
    "This form was closed because what it was about was deleted (`/forget-me`); nothing was"
    " sent. Open it again if you still need it."
)


async def test_the_forms_open_when_their_user_is_forgotten_are_closed_and_submissions_told_why(
    browser: ClientSession, core: RecordingCore, adapter: WebAdapter
) -> None:
    """``/forget-me`` closes the forms its user had open, the one their command opened and the
    one a button on genbot's message (which stays) opened: each submitted after is refused
    with why, and reaches nothing (it would make what was deleted again). A form opened
    again after is theirs to submit."""
    buttons = ((Button("Custom Zoom", "outpaint_custom", "job-9"),),)
    ref = await adapter.surface.send(web_place(), OutMessage("upscaled", buttons=buttons))
    pressed = {"message_id": ref.message_id, "custom_id": "gb:outpaint_custom:job-9"}
    assert (await post(browser, "/api/button", pressed))[0] == 202
    assert (await post(browser, "/api/command", {"text": "/settings"}))[0] == 202
    opened = await core.wait_for_events(2)
    values = {"prompt": "x", "zoom": "1"}
    submits = [
        {"custom_id": "gb:outpaint_custom:job-9", "values": values},
        {"custom_id": "gb:settings:user", "values": values},
    ]

    await adapter.surface.forget_user(opened[0].user.id)

    assert adapter.playground.store.get(ref.message_id) is not None
    for submit in submits:
        assert await post(browser, "/api/modal", submit) == (400, {"error": FORM_CLOSED})
    assert (await post(browser, "/api/command", {"text": "/chat marker"}))[0] == 202
    marker = (await core.wait_for_events(3))[2]
    assert isinstance(marker, Command) and marker.text == "marker", core.events
    assert (await post(browser, "/api/command", {"text": "/settings"}))[0] == 202
    await core.wait_for_events(4)
    assert (await post(browser, "/api/modal", submits[1]))[0] == 202
    assert isinstance((await core.wait_for_events(5))[4], ModalSubmit)
