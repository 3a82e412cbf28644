"""The playground's history in genbot's storage: messages, images, keys and accepted commands
survive a restart of the adapter, the history stays bounded, and an earlier genbot's history
file is imported once."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession, CookieJar
from yarl import URL

from adapters.web import WebAdapter
from adapters.web.journal import PlaygroundJournal, playground_path
from adapters.web.messages import MessageStore, StoredFile, WebMessage, message_record
from adapters.web.settings import WebSettings
from bot.kernel import (
    DATABASE_FULL_TEXT,
    DATABASE_UNREACHABLE_TEXT,
    Button,
    ButtonPress,
    Command,
    ImageFile,
    InboundEvent,
    OutMessage,
    Place,
    SurfaceError,
)
from storage import PlaygroundHistory, SqliteStore
from storage.queries.playground import SQL_ANSWERED, SQL_LOAD
from storage.sqlite.database import SqliteDatabase
from tests.adapters.web.fakes import RecordingCore, eventually, history, png, post
from tests.fakes.router import FakeRouter
from tests.resilience.hostile_files import noise_png
from tests.storage.counting import counted

PLACE = Place("web", "web", "general", None)
LEGACY_INSERT = (
    "INSERT INTO messages (id, channel, pending, image_keys, body) VALUES (?, ?, 0, ?, ?)"
)
LEGACY_SCHEMA = """
CREATE TABLE messages (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, channel TEXT NOT NULL,
    pending INTEGER NOT NULL DEFAULT 0, image_keys TEXT NOT NULL DEFAULT '[]', body TEXT NOT NULL);
CREATE TABLE images (key TEXT PRIMARY KEY, filename TEXT NOT NULL, content_type TEXT NOT NULL,
    width INTEGER, height INTEGER, data BLOB NOT NULL);
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
"""The history file of an earlier genbot, as it was released."""


class StuckCore(RecordingCore):
    """Records events and never finishes handling them (the process dies meanwhile);
    ``answer_first`` posts a first reply before getting stuck."""

    def __init__(self, answer_first: bool = False) -> None:
        super().__init__()
        self.answer_first = answer_first

    async def handle(self, event: InboundEvent) -> None:
        self.events.append(event)
        if self.answer_first:
            assert self.surface is not None
            await self.surface.send(event.place, OutMessage("Waiting to start…"), origin=event)
        await asyncio.sleep(3600)


@asynccontextmanager
async def playground(
    path: Path,
    core: RecordingCore,
    legacy: Path | None = None,
    settings: WebSettings | None = None,
) -> AsyncIterator[WebAdapter]:
    """A playground keeping its history in the SQLite database at ``path`` (opened for it, as
    a genbot process would)."""
    async with (
        await SqliteStore.open(path) as store,
        serving(store.playground, core, legacy=legacy, settings=settings) as adapter,
    ):
        yield adapter


@asynccontextmanager
async def serving(
    history: PlaygroundHistory,
    core: RecordingCore,
    *,
    legacy: Path | None = None,
    settings: WebSettings | None = None,
    clock: Callable[[], float] = time.time,
) -> AsyncIterator[WebAdapter]:
    """A playground keeping its history in ``history``, answered by ``core``."""
    adapter = WebAdapter(
        settings or WebSettings(host="127.0.0.1", port=0),
        history=history,
        legacy_history=legacy,
        clock=clock,
    )
    core.surface = adapter.surface
    await adapter.start(FakeRouter(core, [adapter.surface]))
    try:
        yield adapter
    finally:
        await adapter.stop()


def database_of(adapter: WebAdapter) -> SqliteDatabase:
    """The SQLite database the playground's history is kept in."""
    history = adapter.playground.history
    assert isinstance(history, PlaygroundHistory) and isinstance(history.db, SqliteDatabase)
    return history.db


@asynccontextmanager
async def browser_of(adapter: WebAdapter) -> AsyncIterator[ClientSession]:
    async with ClientSession(base_url=adapter.url, cookie_jar=CookieJar(unsafe=True)) as session:
        async with session.get("/") as page:
            assert page.status == 200
        yield session


def public(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if k != "edited"} for m in messages]


def test_the_history_file_sits_beside_the_database() -> None:
    assert playground_path(Path("/data/genbot.db")) == Path("/data/genbot.playground.db")
    assert playground_path(Path("state")) == Path("state.playground.db")


async def test_messages_images_and_threads_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "genbot.db"
    async with playground(path, RecordingCore()) as adapter, browser_of(adapter) as browser:
        assert (await post(browser, "/api/command", {"text": "/imagine a fox"}))[0] == 202
        assert (await post(browser, "/api/command", {"text": "/chat thread"}))[0] == 202
        assert (await post(browser, "/api/command", {"text": "/help"}))[0] == 202
        await eventually(lambda: adapter.running_handlers == 0)
        before = (await history(browser))["messages"]
        assert len(before) == 7, before
        cookies = {cookie.key: cookie.value for cookie in browser.cookie_jar}

    async with playground(path, RecordingCore()) as adapter, browser_of(adapter) as browser:
        browser.cookie_jar.update_cookies(cookies, URL(adapter.url))
        after = (await history(browser))["messages"]
        assert public(after) == public(before)
        grid = next(m for m in after if m["images"] and m["buttons"])
        async with browser.get(grid["images"][0]["url"]) as response:
            assert response.status == 200 and (await response.read())[:4] == b"\x89PNG"
        thread = next(m for m in after if m["thread_info"])
        assert any(m["thread"] == thread["id"] for m in after)
        assert any(m["kind"] == "ephemeral" for m in after), "the user's private reply"
        pressed = {"message_id": grid["id"], "custom_id": grid["buttons"][0][0]["custom_id"]}
        assert (await post(browser, "/api/button", pressed))[0] == 202


async def test_a_press_on_a_message_only_the_history_holds_reaches_the_core(
    tmp_path: Path,
) -> None:
    """Another process (or an earlier run) saved the message; this one never showed it."""
    core = RecordingCore()
    async with playground(tmp_path / "genbot.db", core) as adapter, browser_of(adapter) as browser:
        journal = adapter.playground.journal
        assert journal is not None
        buttons = ((Button("U2", "upscale2", "job-3"),),)
        for message_id, channel in [("elsewhere-1", "art"), ("elsewhere-2", "dm-someone")]:
            saved = WebMessage(
                message_id, channel, None, "bot", {"id": "genbot"}, "grid", created=1.0
            )
            saved.buttons = buttons
            await journal.save(saved, [])
        assert adapter.playground.store.get("elsewhere-1") is None

        pressed = {"message_id": "elsewhere-1", "custom_id": "gb:upscale2:job-3"}
        assert (await post(browser, "/api/button", pressed))[0] == 202
        [event] = await core.wait_for_events(1)
        assert isinstance(event, ButtonPress)
        assert (event.place, event.ref) == (Place("web", "web", "art", None), "job-3")
        not_on_it = {"message_id": "elsewhere-1", "custom_id": "gb:upscale1:job-4"}
        assert (await post(browser, "/api/button", not_on_it))[0] == 400
        in_their_dm = {"message_id": "elsewhere-2", "custom_id": "gb:upscale2:job-3"}
        assert (await post(browser, "/api/button", in_their_dm))[0] == 400
        assert len(core.events) == 1


async def test_a_keyed_message_is_posted_once_across_restarts(tmp_path: Path) -> None:
    path = tmp_path / "genbot.db"
    result = OutMessage("done", images=(ImageFile("r.png", png()),), key="job1.result")
    async with playground(path, RecordingCore()) as adapter:
        first = await adapter.surface.send(PLACE, result)
        assert await adapter.surface.send(PLACE, result) == first
        other = await adapter.surface.send(PLACE, OutMessage("failed", key="job2.failure"))
        assert other != first

    async with playground(path, RecordingCore()) as adapter:
        again = await adapter.surface.send(
            PLACE, OutMessage("done", key="job1.result", may_exist=True)
        )
        assert again == first
        assert await adapter.surface.posted(PLACE, "job1.result") == first
        assert await adapter.surface.posted(PLACE, "job3.result") is None
        shown = adapter.playground.store.history("general", "anyone")
        assert [m.text for m in shown] == ["done", "failed"]


async def test_a_command_accepted_before_a_crash_is_handled_after_the_restart(
    tmp_path: Path,
) -> None:
    path = tmp_path / "genbot.db"
    stuck = StuckCore()
    async with playground(path, stuck) as adapter, browser_of(adapter) as browser:
        status, answer = await post(browser, "/api/command", {"text": "/imagine a heron"})
        assert status == 202
        await stuck.wait_for_events(1)

    core = RecordingCore()
    async with playground(path, core) as adapter:
        [event] = await core.wait_for_events(1)
        assert isinstance(event, Command) and event.name == "imagine"
        assert event.text == "a heron" and event.user == stuck.events[0].user
        assert event.context.request_message_id == answer["event_id"]
        await eventually(lambda: adapter.running_handlers == 0)

    later = RecordingCore()
    async with playground(path, later) as adapter:
        assert await adapter.intake.drain(5) == 0, "whatever the start resumed has run"
    assert later.events == [], "a handled command is not handled again"


async def test_a_command_genbot_already_answered_is_not_handled_again(tmp_path: Path) -> None:
    path = tmp_path / "genbot.db"
    stuck = StuckCore(answer_first=True)
    async with playground(path, stuck) as adapter, browser_of(adapter) as browser:
        assert (await post(browser, "/api/command", {"text": "/imagine a heron"}))[0] == 202
        await eventually(lambda: len(adapter.playground.store.history("general", "anyone")) == 2)

    core = RecordingCore()
    async with playground(path, core) as adapter:
        assert await adapter.intake.drain(5) == 0, "whatever the start resumed has run"
    assert core.events == []


async def test_a_command_is_marked_handled_once_however_often_its_answer_changes(
    tmp_path: Path,
) -> None:
    """Each save of a message of genbot's replying to a command marked the command handled
    again: every step of a job's progress message, and its result (a statement each time,
    2,447 in the 3000-job burst, that changed nothing)."""
    core = StuckCore()
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        adapter = WebAdapter(WebSettings(host="127.0.0.1", port=0), history=store.playground)
        core.surface = adapter.surface
        await adapter.start(FakeRouter(core, [adapter.surface]))
        try:
            async with browser_of(adapter) as browser:
                assert (await post(browser, "/api/command", {"text": "/imagine a heron"}))[0] == 202
                [event] = await core.wait_for_events(1)
            trips = counted(store).trips
            ref = await adapter.surface.send(PLACE, OutMessage("Queued"), origin=event)
            for step in ("Drawing", "Drawing 0:05", "the grid"):
                await adapter.surface.edit(ref, OutMessage(step))
            marks = [sql for trip in trips for sql, _ in trip.statements if sql == SQL_ANSWERED]
            assert len(marks) == 1, f"{len(marks)} marks"
            messages, _ = await store.playground.load_playground(keep=10)
            assert [m.pending for m in messages] == [False, False]
        finally:
            await adapter.stop()


async def test_the_file_keeps_each_channels_latest_messages_and_their_images(
    tmp_path: Path,
) -> None:
    store = MessageStore(max_messages_per_channel=3)
    async with await SqliteStore.open(tmp_path / "p.db") as database:
        journal = PlaygroundJournal(database.playground, max_messages_per_channel=3)
        for number in range(5):
            message = WebMessage(
                str(number), "general", None, "bot", {"id": "genbot"}, created=float(number)
            )
            store.replace_images(message, (ImageFile(f"{number}.png", png(4 + number)),))
            await journal.save(store.add(message), store.stored_images(message))
        other = WebMessage("x", "art", None, "bot", {"id": "genbot"}, text="elsewhere", created=5.0)
        await journal.save(store.add(other), [])
        saved = await journal.load()
    assert [m.id for m in saved.messages] == ["2", "3", "4", "x"]
    shown = {key for m in saved.messages for key in m.image_keys()}
    assert set(saved.images) == shown and len(shown) == 3
    assert all(
        isinstance(f, StoredFile) and f.data[:4] == b"\x89PNG" for f in saved.images.values()
    )


async def test_each_channel_keeps_as_many_messages_as_the_setting_says(tmp_path: Path) -> None:
    """``[web] messages_per_channel``: the page and the history keep a channel's latest that
    many messages (500 by default)."""
    settings = WebSettings(host="127.0.0.1", port=0, messages_per_channel=10)
    for keep in (settings, None):
        path = tmp_path / f"{keep is None}.db"
        async with playground(path, RecordingCore(), settings=keep) as adapter:
            for number in range(12):
                await adapter.surface.send(PLACE, OutMessage(text=f"note {number}"))
            async with browser_of(adapter) as browser:
                shown = [m["text"] for m in (await history(browser))["messages"]]
        async with (
            playground(path, RecordingCore(), settings=keep) as adapter,
            browser_of(adapter) as browser,
        ):
            kept = [m["text"] for m in (await history(browser))["messages"]]
        latest = 10 if keep is not None else 12
        expected = [f"note {number}" for number in range(12 - latest, 12)]
        assert shown == kept == expected


async def test_a_message_that_cannot_be_kept_is_neither_shown_nor_remembered(
    tmp_path: Path,
) -> None:
    path = tmp_path / "genbot.db"
    async with playground(path, RecordingCore()) as adapter:
        await database_of(adapter).close()
        with pytest.raises(SurfaceError, match="could not keep the message"):
            await adapter.surface.send(PLACE, OutMessage("lost?", key="job1.result"))
        assert adapter.playground.store.history("general", "anyone") == []
        assert adapter.playground.store.keyed("general", None, "job1.result") is None
        assert await adapter.surface.posted(PLACE, "job1.result") is None

    async with await SqliteStore.open(path) as store:
        stopped = WebAdapter(WebSettings(host="127.0.0.1", port=0), history=store.playground)
        await stopped.start(FakeRouter(RecordingCore(), [stopped.surface]))
        await stopped.stop()
        with pytest.raises(SurfaceError, match="stopped"):
            await stopped.surface.send(PLACE, OutMessage("after the stop"))


async def test_a_page_loaded_where_nothing_was_skipped_reads_no_history(
    tmp_path: Path,
) -> None:
    """A process alone on its database skips no other process's save: the first browser to
    come has nothing to catch up on."""
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        adapter = WebAdapter(WebSettings(host="127.0.0.1", port=0), history=store.playground)
        await adapter.start(FakeRouter(RecordingCore(), [adapter.surface]))
        try:
            await adapter.surface.send(PLACE, OutMessage("a fox"))
            trips = counted(store).trips

            async with browser_of(adapter) as browser:
                assert [m["text"] for m in (await history(browser))["messages"]] == ["a fox"]

            load = SQL_LOAD.partition("{")[0]
            assert not [s for trip in trips for s, _ in trip.statements if s.startswith(load)]
        finally:
            await adapter.stop()


async def test_a_key_never_posted_is_not_looked_for_in_the_history(tmp_path: Path) -> None:
    """A process alone on its database holds all its history does: a job recovered after a
    restart finds its keyed messages posted or not without reading the history."""
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        adapter = WebAdapter(WebSettings(host="127.0.0.1", port=0), history=store.playground)
        await adapter.start(FakeRouter(RecordingCore(), [adapter.surface]))
        try:
            trips = counted(store).trips

            assert await adapter.surface.posted(PLACE, "job1.progress") is None

            assert [sql for trip in trips for sql, _ in trip.statements] == []
        finally:
            await adapter.stop()


async def test_an_edit_that_cannot_be_kept_changes_nothing_shown(tmp_path: Path) -> None:
    async with playground(tmp_path / "genbot.db", RecordingCore()) as adapter:
        database = database_of(adapter)
        ref = await adapter.surface.send(PLACE, OutMessage("⏳ drawing", key="job1.progress"))
        await database.run(lambda db: db.execute("PRAGMA query_only = 1"))
        with pytest.raises(SurfaceError, match="could not keep the message"):
            await adapter.surface.edit(ref, OutMessage("❌ could not start"))
        with pytest.raises(SurfaceError, match="could not keep the message"):
            await adapter.surface.delete(ref)
        with pytest.raises(SurfaceError, match="could not keep the message"):
            await adapter.surface.start_thread(ref, "a thread")
        [shown] = adapter.playground.store.history("general", "anyone")
        assert (shown.text, shown.deleted, shown.thread_info) == ("⏳ drawing", False, None)

        await database.run(lambda db: db.execute("PRAGMA query_only = 0"))
        await adapter.surface.edit(ref, OutMessage("❌ could not start"))
        assert [m.text for m in adapter.playground.store.history("general", "anyone")] == [
            "❌ could not start"
        ]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/command", {"text": "/imagine a fox", "channel": "general"}),
        ("/api/message", {"text": "and a hare", "channel": "general", "thread": "m-elsewhere"}),
    ],
    ids=["command", "reply in a thread it must read"],
)
async def test_a_post_the_database_cannot_serve_is_refused_with_a_json_error(
    tmp_path: Path, path: str, body: dict[str, str]
) -> None:
    core = RecordingCore()
    async with playground(tmp_path / "genbot.db", core) as adapter, browser_of(adapter) as browser:
        await database_of(adapter).close()
        async with browser.post(path, json=body) as response:
            assert response.status == 503
            assert response.content_type == "application/json"
            answer = await response.json()
    assert answer == {"error": DATABASE_UNREACHABLE_TEXT}
    assert core.events == []
    assert adapter.playground.store.history("general", "anyone") == []


async def test_a_command_on_a_read_only_database_is_refused_saying_so(tmp_path: Path) -> None:
    core = RecordingCore()
    async with playground(tmp_path / "genbot.db", core) as adapter, browser_of(adapter) as browser:
        await database_of(adapter).run(lambda db: db.execute("PRAGMA query_only = 1"))
        body = {"text": "/imagine a fox", "channel": "general"}
        async with browser.post("/api/command", json=body) as response:
            assert response.status == 503
            assert await response.json() == {"error": DATABASE_FULL_TEXT}
    assert core.events == []


class DatabaseLostWhileHandling(RecordingCore):
    """The database refuses writes while the first event is handled (its end is not
    recorded), then comes back."""

    database: SqliteDatabase | None = None

    async def handle(self, event: InboundEvent) -> None:
        self.events.append(event)
        self._arrived.set()
        if self.database is not None and len(self.events) == 1:
            await self.database.run(lambda db: db.execute("PRAGMA query_only = 1"))


async def test_a_command_whose_end_was_not_recorded_is_handled_again_with_its_key(
    tmp_path: Path,
) -> None:
    core = DatabaseLostWhileHandling()
    async with playground(tmp_path / "genbot.db", core) as adapter, browser_of(adapter) as browser:
        core.database = database = database_of(adapter)
        status, shown = await post(browser, "/api/command", {"text": "/imagine a fox"})
        assert status == 202
        [first] = await core.wait_for_events(1)
        await eventually(lambda: not adapter.handling(shown["event_id"]))
        await database.run(lambda db: db.execute("PRAGMA query_only = 0"))
        assert adapter.playground.store.pending() != []

        await adapter._take_pending(time.time() + 1)

        [_, again] = await core.wait_for_events(2)
        assert isinstance(first, Command) and isinstance(again, Command)
        assert again.key == first.key == f"web:{shown['event_id']}"
        await eventually(lambda: adapter.playground.store.pending() == [])


async def test_an_earlier_genbots_history_file_is_imported_once(tmp_path: Path) -> None:
    legacy = tmp_path / "genbot.playground.db"
    conn = sqlite3.connect(legacy)
    with conn:
        conn.executescript(LEGACY_SCHEMA)
        message = WebMessage(
            "old-1", "general", None, "bot", {"id": "genbot"}, text="from 2025", created=1.0
        )
        body = json.dumps(message_record(message))
        conn.execute(
            "INSERT INTO messages (id, channel, pending, image_keys, body) VALUES (?, ?, 0, ?, ?)",
            ("old-1", "general", "[]", body),
        )
    conn.close()
    async with playground(tmp_path / "genbot.db", RecordingCore(), legacy) as adapter:
        shown = adapter.playground.store.history("general", "anyone")
        assert [m.text for m in shown] == ["from 2025"]
    assert not legacy.exists() and legacy.with_name(legacy.name + ".imported").exists()
    async with playground(tmp_path / "genbot.db", RecordingCore(), legacy) as adapter:
        assert len(adapter.playground.store.history("general", "anyone")) == 1


async def test_an_earlier_genbots_history_is_imported_in_a_few_transactions_in_order(
    tmp_path: Path,
) -> None:
    """250 messages of an earlier genbot's file are saved together, a hundred at a time, not one
    transaction apiece (each save would wait for the ones before it), and keep their order."""
    legacy = tmp_path / "genbot.playground.db"
    conn = sqlite3.connect(legacy)
    with conn:
        conn.executescript(LEGACY_SCHEMA)
        for n in range(250):
            message = WebMessage(
                f"old-{n}", "general", None, "bot", {"id": "genbot"}, text=f"{n}", created=n
            )
            row = (message.id, "general", "[]", json.dumps(message_record(message)))
            conn.execute(LEGACY_INSERT, row)
    conn.close()
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        trips = counted(store).trips
        journal = PlaygroundJournal(store.playground, 300)
        assert await journal.import_file(legacy) == 250
        assert len(trips) <= 6
        shown = await journal.channel("general")
        assert [m.text for m in shown] == [f"{n}" for n in range(250)]


async def test_images_out_of_memory_are_served_and_downloaded_from_the_history(
    tmp_path: Path,
) -> None:
    images = [ImageFile(f"{i}.png", noise_png(40, 40, seed=i)) for i in range(4)]
    core = RecordingCore()
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        adapter = WebAdapter(
            WebSettings(host="127.0.0.1", port=0),
            history=store.playground,
            max_image_memory=len(images[0].data) * 2,
        )
        core.surface = adapter.surface
        await adapter.start(FakeRouter(core, [adapter.surface]))
        try:
            for image in images:
                await adapter.surface.send(PLACE, OutMessage("an image", images=(image,)))
            playground = adapter.playground
            first = playground.store.history("general", "")[0]
            assert playground.store.image(first.images[0]["key"]) is None
            [attachment] = playground.attachments_of(first, playground.url)
            assert attachment.data is None
            assert await adapter.surface.download(attachment) == images[0].data
            async with browser_of(adapter) as browser, browser.get(first.images[0]["url"]) as got:
                assert got.status == 200 and await got.read() == images[0].data
            assert playground.store.image(first.images[0]["key"]) is not None, "kept once read"
        finally:
            await adapter.stop()


async def test_a_command_accepted_while_stopping_is_left_for_the_next_process(
    tmp_path: Path,
) -> None:
    path = tmp_path / "genbot.db"
    stopping = RecordingCore()
    async with playground(path, stopping) as adapter, browser_of(adapter) as browser:
        adapter.intake.stop()
        status, shown = await post(browser, "/api/command", {"text": "/imagine a heron"})
        assert status == 202
        assert await adapter.intake.drain(5) == 0
        assert [m["kind"] for m in (await history(browser))["messages"]] == ["user"]
        assert [m.id for m in adapter.playground.store.pending()] == [shown["event_id"]]
    assert stopping.events == []

    core = RecordingCore()
    async with playground(path, core) as adapter:
        [event] = await core.wait_for_events(1)
        assert isinstance(event, Command) and event.text == "a heron"
        assert event.context.request_message_id == shown["event_id"]
