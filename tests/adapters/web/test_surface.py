"""The adapter as the core sees it: a :class:`bot.kernel.surface.Surface` with the playground's
rules."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from aiohttp import ClientSession
from pydantic import SecretStr

from adapters.web import WebAdapter
from adapters.web.platform import WebContext
from adapters.web.settings import WebSettings
from bot.kernel import (
    Attachment,
    Button,
    Command,
    ImageFile,
    MessageGone,
    MessageRef,
    OutMessage,
    Place,
    Surface,
    SurfaceError,
    SurfaceRegistry,
    User,
    UserMessage,
)
from bot.outbox import Outbox, Post, WritePolicy
from bot.outbox.pacing import Pacer
from tests.adapters.web.fakes import RecordingCore, SseReader, history, png, post
from tests.fakes.clock import FakeClock
from tests.fakes.router import FakeRouter

PLACE = Place("web", "web", "general", None)
OpenStream = Callable[..., Awaitable[SseReader]]


async def test_is_a_surface_for_platform_web(adapter: WebAdapter) -> None:
    surface: Surface = adapter.surface
    assert surface.platform == "web"
    assert surface.profile.max_text == 4000


async def test_the_window_is_spent_exactly_without_a_margin(adapter: WebAdapter) -> None:
    """The playground advertises its window and enforces none, so no margin is added to it: a
    channel's write beyond the window goes as the first one's window ends, not a margin later
    as on a platform that counts writes itself (that its writes count from their grant, not
    their return, is the pacer's tests' to show)."""
    fake = FakeClock()
    outbox = Outbox(SurfaceRegistry([adapter.surface]), Pacer(fake.clock))
    profile = adapter.surface.profile
    posted: list[float] = []

    async def post_all() -> None:
        for n in range(profile.edits_per_window_per_channel + 1):
            await outbox.write(PLACE, Post(OutMessage(f"note {n}")), WritePolicy.RAISE)
            posted.append(fake.now)

    await fake.run(post_all())
    assert posted == [0.0] * profile.edits_per_window_per_channel + [profile.edit_window_seconds]


async def test_start_binds_the_configured_host_and_a_free_port(core: RecordingCore) -> None:
    adapter = WebAdapter(WebSettings(host="127.0.0.1", port=0))
    with pytest.raises(RuntimeError, match="not started"):
        _ = adapter.url
    await adapter.start(FakeRouter(core, [adapter.surface]))
    try:
        assert adapter.url.startswith("http://127.0.0.1:")
        assert not adapter.url.endswith(":0")
        async with ClientSession() as session, session.get(adapter.url + "/") as response:
            assert response.status == 200
    finally:
        await adapter.stop()
    with pytest.raises(RuntimeError):
        _ = adapter.url


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (OutMessage("x" * 4001), "4001 characters; the playground takes 4000"),
        (OutMessage("ok", buttons=((Button("b", "reroll", "r"),) * 6,)), "at most 5 buttons a row"),
        (OutMessage("ok", buttons=((Button("b", "reroll", "r"),),) * 6), "at most 5 rows"),
    ],
)
async def test_messages_beyond_the_limits_are_refused(
    adapter: WebAdapter, message: OutMessage, error: str
) -> None:
    with pytest.raises(SurfaceError, match=error):
        await adapter.surface.send(PLACE, message)
    ref = await adapter.surface.send(PLACE, OutMessage("fine"))
    with pytest.raises(SurfaceError, match=error):
        await adapter.surface.edit(ref, message)


async def test_wrong_platform_and_unknown_messages_are_refused(adapter: WebAdapter) -> None:
    with pytest.raises(SurfaceError, match="platform 'discord'"):
        await adapter.surface.send(Place("discord", "g", "c"), OutMessage("x"))
    with pytest.raises(SurfaceError, match="no genbot message 'nope'"):
        await adapter.surface.edit(MessageRef(PLACE, "nope"), OutMessage("x"))
    with pytest.raises(SurfaceError, match="does not hold"):
        await adapter.surface.download(Attachment(filename="a.png", url="https://elsewhere/a.png"))


async def test_users_messages_cannot_be_edited_by_genbot(
    browser: ClientSession, adapter: WebAdapter
) -> None:
    _, answer = await post(browser, "/api/message", {"text": "mine"})
    with pytest.raises(SurfaceError):
        await adapter.surface.edit(MessageRef(PLACE, answer["event_id"]), OutMessage("changed"))


async def test_edit_without_images_keeps_the_images(
    browser: ClientSession, adapter: WebAdapter
) -> None:
    ref = await adapter.surface.send(PLACE, OutMessage("a", images=(ImageFile("a.png", png()),)))
    await adapter.surface.edit(ref, OutMessage("b"))
    [message] = (await history(browser))["messages"]
    assert message["text"] == "b" and len(message["images"]) == 1
    assert message["edited"] is not None


async def test_a_deleted_message_leaves_the_channel_and_its_browsers(
    browser: ClientSession, adapter: WebAdapter, stream: OpenStream
) -> None:
    ref = await adapter.surface.send(PLACE, OutMessage("⏳ working", key="j1.progress"))
    reader = await stream()
    await adapter.surface.delete(ref)
    event = await reader.next()
    assert event.data["type"] == "delete" and event.data["message"]["id"] == ref.message_id
    assert (await history(browser))["messages"] == []
    assert await adapter.surface.posted(PLACE, "j1.progress") is None
    with pytest.raises(MessageGone):
        await adapter.surface.edit(ref, OutMessage("done"))
    with pytest.raises(MessageGone):
        await adapter.surface.delete(ref)


async def test_typing_is_streamed(adapter: WebAdapter, stream: OpenStream) -> None:
    reader = await stream()
    await adapter.surface.typing(PLACE.in_thread("t1"))
    event = await reader.next()
    assert event.data["type"] == "typing" and event.data["thread"] == "t1"
    assert event.data["seconds"] > 0


async def test_threads_hold_their_own_conversation(
    browser: ClientSession, adapter: WebAdapter, core: RecordingCore, stream: OpenStream
) -> None:
    reader = await stream()
    parent = await adapter.surface.send(PLACE, OutMessage("a conversation starts"))
    thread = await adapter.surface.start_thread(parent, "Fox names")
    assert thread == PLACE.in_thread(parent.message_id)
    events = [await reader.next(), await reader.next()]
    assert [e.data["type"] for e in events] == ["post", "edit"]
    assert events[1].data["message"]["thread_info"] == {
        "id": parent.message_id,
        "name": "Fox names",
    }
    await adapter.surface.send(thread, OutMessage("inside"))
    inside = (await reader.next()).data["message"]
    assert inside["thread"] == parent.message_id
    body = {"text": "and a reply", "thread": parent.message_id}
    assert (await post(browser, "/api/message", body))[0] == 202
    [event] = await core.wait_for_events(1)
    assert isinstance(event, UserMessage) and event.place == thread
    with pytest.raises(SurfaceError, match="inside a thread"):
        await adapter.surface.start_thread(MessageRef(thread, inside["id"]), "nested")


async def test_ephemeral_reply_to_an_event_refers_to_its_message(
    browser: ClientSession, adapter: WebAdapter
) -> None:
    user = User(id=(await history(browser))["me"]["id"], name="you")
    origin = UserMessage(user=user, place=PLACE, message_id="m-1", text="hi")
    await adapter.surface.send_ephemeral(origin, "just for you")
    [message] = (await history(browser))["messages"]
    assert (message["kind"], message["reply_to"], message["text"]) == (
        "ephemeral",
        "m-1",
        "just for you",
    )


async def test_a_command_is_private_until_genbot_answers_it_in_public(
    adapter: WebAdapter, core: RecordingCore, browsers: Callable[[], ClientSession]
) -> None:
    alice, bob = browsers(), browsers()
    for text in ("/help", "/settings"):
        status, _ = await post(alice, "/api/command", {"text": text, "channel": "general"})
        assert status == 202
    _, settings = await core.wait_for_events(2)
    assert [m["text"] for m in (await history(bob))["messages"]] == []
    mine = [m for m in (await history(alice))["messages"] if m["kind"] == "user"]
    assert [(m["text"], m["private"]) for m in mine] == [("/help", True), ("/settings", True)]

    await adapter.surface.send(PLACE, OutMessage("Posted for all"), origin=settings)
    seen = [(m["text"], m["private"]) for m in (await history(bob))["messages"]]
    assert seen == [("/settings", False), ("Posted for all", False)]


async def test_messages_and_commands_are_dated_on_the_clock_the_adapter_is_given(
    core: RecordingCore,
) -> None:
    """The playground dated its messages and judged a pending command's grace on ``time.time``,
    while the processes sharing its history each read their own host's: on hosts whose wall
    clocks differ, messages took their places out of order and a command another process had
    just accepted looked past its grace. It reads the clock it is given (the store's)."""
    start = 1_700_000_000.0
    settings = WebSettings(
        host="127.0.0.1", port=0, access_token=SecretStr("let me in, I am a test")
    )
    adapter = WebAdapter(settings, clock=lambda: start)
    core.surface = adapter.surface
    await adapter.start(FakeRouter(core, [adapter.surface]))
    try:
        ref = await adapter.surface.send(PLACE, OutMessage("a fox"))
        await adapter.surface.edit(ref, OutMessage("a red fox"))
        asked = await adapter.playground.post_user_message(
            User("u1"), PLACE, "/imagine a fox", [], command="imagine"
        )
        shown = adapter.playground.store.history("general", "u1")
        assert sorted((m.text, m.created, m.edited) for m in shown) == [
            ("/imagine a fox", start, None),
            ("a red fox", start, start),
        ]
        assert await adapter.playground.claim_pending(start) == []
        assert await adapter.playground.claim_pending(start + 1) == [asked.id]
        assert adapter.access.access_cookie().startswith(f"{int(start)}.")
    finally:
        await adapter.stop()


async def test_an_export_whose_command_was_forgotten_is_refused_to_its_user_unkept(
    browser: ClientSession, adapter: WebAdapter, stream: OpenStream
) -> None:
    """The user ran ``/forget-me`` while their export was being made: its command is gone, so
    the export is not handed over (no file held for them, no link). They are told so, only
    they and only for now (a process with a history does not keep it: see
    tests/adapters/web/test_cluster.py). An export whose command is still there is handed over
    as before."""
    ann = User((await history(browser))["me"]["id"], "Ann")
    reader = await stream()
    asked = await adapter.playground.post_user_message(
        ann, PLACE, "/jobs export", [], command="jobs.export"
    )
    export = Command(user=ann, place=PLACE, name="jobs.export", context=WebContext(asked.id))
    await adapter.surface.forget_user(ann.id)

    await adapter.surface.send_file_privately(export, "Your jobs", "jobs.zip", b"PK")

    assert adapter.playground.downloads.owned_by(ann.id) == 0
    told = await reader.until(lambda d: d["type"] == "ephemeral")
    text = told[-1].data["message"]["text"]
    assert "`jobs.zip` is not handed over" in text and "/downloads/" not in text
    assert [m["text"] for m in (await history(browser))["messages"]] == [text]

    again = await adapter.playground.post_user_message(
        ann, PLACE, "/jobs export", [], command="jobs.export"
    )
    export = Command(user=ann, place=PLACE, name="jobs.export", context=WebContext(again.id))
    await adapter.surface.send_file_privately(export, "Your jobs", "jobs.zip", b"PK")
    assert adapter.playground.downloads.owned_by(ann.id) == 1
