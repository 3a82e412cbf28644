"""The playground on PostgreSQL with several genbot processes: a message one process shows
(with its images, edits and deletions) reaches the browsers of every other process. In a
channel no browser on a process watches, that process reads only the changes of the messages
it holds (of the others, the notice: the channel is listed and marked unread), and catches up
when a browser comes to watch it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar

import psycopg
import pytest
from aiohttp import ClientSession, CookieJar
from prometheus_client import REGISTRY
from yarl import URL

from adapters.web import WebAdapter, handlers, playground
from adapters.web.access import SESSION_COOKIE
from adapters.web.hub import MAX_STREAMS_PER_USER
from adapters.web.messages import BOT_AUTHOR, StoredFile, WebMessage
from adapters.web.platform import PendingModal, WebContext, dm_channel
from adapters.web.settings import WebSettings
from bot.kernel import (
    Button,
    ButtonPress,
    Command,
    ImageFile,
    MessageRef,
    Modal,
    ModalField,
    OutMessage,
    Place,
    User,
    backoff,
)
from storage.postgres import PostgresStore
from storage.queries.playground import (
    CHANNEL,
    SQL_CHANNEL,
    SQL_IMAGES,
    SQL_KEYED,
    SQL_LOAD,
    SQL_ONE,
    SQL_SOME,
    PlaygroundHistory,
)
from storage.sql.session import Database, Row, Values
from tests.adapters.web.fakes import (
    RecordingCore,
    SseReader,
    eventually,
    history,
    png,
    post,
    zoom_modal,
)
from tests.fakes.router import FakeRouter
from tests.postgres import PostgresCluster
from tests.storage.counting import CountingDatabase

T = TypeVar("T")
PLACE = Place("web", "web", "general", None)
BENCH = Place("web", "web", "bench0", None)
ACROSS_PROCESSES = 30.0
"""Seconds a change may take to reach the other process (the journal is read on a notification
or a timer; a loaded machine can delay either)."""


@asynccontextmanager
async def process(
    url: str, *, messages_per_channel: int = 500, server_clock: bool = False
) -> AsyncIterator[WebAdapter]:
    """One genbot process's playground on the shared database (``server_clock``: on the
    store's clock, the database server's, as genbot composes it; else this host's)."""
    async with await PostgresStore.open(url, pool_size=2) as store:
        core = RecordingCore()
        settings = WebSettings(host="127.0.0.1", port=0, messages_per_channel=messages_per_channel)
        adapter = WebAdapter(
            settings,
            history=store.playground,
            keepalive_seconds=0.1,
            clock=store.clock if server_clock else time.time,
        )
        core.surface = adapter.surface
        await adapter.start(FakeRouter(core, [adapter.surface]))
        try:
            yield adapter
        finally:
            await adapter.stop()


@asynccontextmanager
async def browser_on(adapter: WebAdapter) -> AsyncIterator[ClientSession]:
    """A browser on ``adapter``'s playground (with the session a page load gives)."""
    async with ClientSession(base_url=adapter.url, cookie_jar=CookieJar(unsafe=True)) as session:
        given_by_a_page_load = {SESSION_COOKIE: adapter.access.new_session()}
        session.cookie_jar.update_cookies(given_by_a_page_load, URL(adapter.url))
        yield session


@asynccontextmanager
async def watching(adapter: WebAdapter, channel: str = "general") -> AsyncIterator[SseReader]:
    """A browser following ``channel`` on ``adapter`` (its event stream, from its ``hello``
    on), until it leaves (its stream ended on the server too)."""
    hub = adapter.playground.hub
    others = hub.subscriber_count(channel)
    async with (
        browser_on(adapter) as session,
        session.get("/api/events", params={"channel": channel}) as response,
    ):
        assert response.status == 200, await response.text()
        reader = SseReader(response)
        assert (await reader.next()).data["type"] == "hello"
        yield reader
    await eventually(lambda: hub.subscriber_count(channel) == others, ACROSS_PROCESSES)


async def posted_next(stream: SseReader) -> str:
    """The text of the message the stream's next event posts."""
    event = await stream.next(ACROSS_PROCESSES)
    assert event.data["type"] == "post", event.data
    return str(event.data["message"]["text"])


def counted(adapter: WebAdapter) -> CountingDatabase:
    """Count what ``adapter``'s playground asks of the database from now on."""
    history = adapter.playground.history
    assert isinstance(history, PlaygroundHistory)
    counting = CountingDatabase(history.db)
    history.db = counting
    return counting


def messages_read(counting: CountingDatabase) -> list[str]:
    """The ids of the messages read by id (one, or several together)."""
    return [
        str(message_id)
        for trip in counting.trips
        for sql, values in trip.statements
        if sql.startswith("SELECT * FROM playground_messages WHERE id")
        for message_id in values
    ]


def statements(counting: CountingDatabase, sql: str) -> int:
    """How many of the statements counted start as ``sql`` does (up to its first ``{``)."""
    start = sql.partition("{")[0]
    return sum(s.startswith(start) for trip in counting.trips for s, _ in trip.statements)


def texts(adapter: WebAdapter) -> list[str]:
    return [m.text for m in adapter.playground.store.history("general", "anyone")]


async def skipped_by_second(first: WebAdapter, second: WebAdapter, posts: list[str]) -> int:
    """``first`` posts ``posts`` in ``general`` while no browser on ``second`` watches it;
    returns once ``second``
    has had every notice of them (it shows the edit ``first`` makes after them of the message
    ``second`` posted before them, ``"held"`` → ``"held, edited"``): how many messages
    ``second`` read by id meanwhile."""
    held = await second.surface.send(PLACE, OutMessage("held"))
    counting = counted(second)
    for text in posts:
        await first.surface.send(PLACE, OutMessage(text))
    await first.surface.edit(held, OutMessage("held, edited"))

    def edit_shown() -> bool:
        message = second.playground.store.get(held.message_id)
        return message is not None and message.text == "held, edited"

    await eventually(edit_shown, ACROSS_PROCESSES)
    return len(set(messages_read(counting)))


async def test_a_browser_on_any_process_sees_every_message(postgres: PostgresCluster) -> None:
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second) as stream:
        shown = OutMessage("a fox", images=(ImageFile("fox.png", png()),))
        ref = await first.surface.send(PLACE, shown)

        def seen() -> list[str]:
            return [m.text for m in second.playground.store.history("general", "anyone")]

        await eventually(lambda: seen() == ["a fox"], ACROSS_PROCESSES)
        [copy] = second.playground.store.history("general", "anyone")
        assert copy.id == ref.message_id
        key = copy.images[0]["key"]
        assert second.playground.store.image(key) is None, "image bytes are read when asked for"
        served = await second.playground.image_file(key)
        assert served is not None and served.data == png()
        assert second.playground.store.image(key) == served
        assert await posted_next(stream) == "a fox"

        await first.surface.edit(MessageRef(PLACE, ref.message_id), OutMessage("a red fox"))
        await eventually(lambda: seen() == ["a red fox"], ACROSS_PROCESSES)
        await first.surface.delete(MessageRef(PLACE, ref.message_id))
        await eventually(lambda: seen() == [], ACROSS_PROCESSES)

    async with process(url) as later:
        assert [m.text for m in later.playground.store.history("general", "anyone")] == []


async def test_a_message_saved_late_elsewhere_takes_its_place_by_its_time_everywhere(
    postgres: PostgresCluster,
) -> None:
    url = postgres.create_schema()
    async with (
        process(url) as first,
        process(url) as second,
        watching(first),
        watching(second),
    ):
        store = second.playground.store
        made_first = WebMessage(
            store.new_id(),
            "general",
            None,
            "bot",
            BOT_AUTHOR,
            "made first",
            created=second.playground.clock(),
        )
        await first.surface.send(PLACE, OutMessage("made later, saved first"))
        await second.playground.keep("post", made_first, new=True)

        def shown(adapter: WebAdapter) -> list[str]:
            return [m.text for m in adapter.playground.store.history("general", "anyone")]

        await eventually(lambda: len(shown(first)) == len(shown(second)) == 2, ACROSS_PROCESSES)
        in_order = ["made first", "made later, saved first"]
        assert shown(first) == shown(second) == in_order

    async with process(url) as restarted:
        assert shown(restarted) == in_order


async def test_notices_that_come_together_are_read_together(postgres: PostgresCluster) -> None:
    """A process a browser watches reads what the others save: the notices that came while it
    was showing earlier ones are read in one statement, not one each."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second):
        counting = counted(second)
        await asyncio.gather(
            *(first.surface.send(PLACE, OutMessage(f"fox {n}")) for n in range(20))
        )

        def shown(adapter: WebAdapter) -> list[str]:
            return [m.id for m in adapter.playground.store.history("general", "anyone")]

        await eventually(lambda: len(shown(second)) == 20, ACROSS_PROCESSES)
        assert shown(second) == shown(first)
        reads = [
            sql
            for trip in counting.trips
            for sql, _ in trip.statements
            if sql.startswith("SELECT * FROM playground_messages")
        ]
        assert 1 <= len(reads) <= 4, reads


def cut_following(url: str) -> None:
    """Terminate every process's connection following the playground's history."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE query = %s AND pid <> pg_backend_pid()",
            (f"LISTEN {CHANNEL}",),
        )


def listening(url: str) -> int:
    """How many connections follow the playground's history now."""
    with psycopg.connect(url, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE query = %s", (f"LISTEN {CHANNEL}",)
        ).fetchone()
    assert row is not None
    return int(row[0])


def feed_failures() -> float:
    """How often following the playground's history failed in this process so far."""
    sample = REGISTRY.get_sample_value("genbot_storage_failures_total", {"kind": "playground_feed"})
    return sample or 0.0


async def test_a_message_saved_while_following_was_cut_is_shown_when_it_resumes(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(playground, "FOLLOW_RETRY_SECONDS", 2.0)
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second:
        before = feed_failures()
        cut_following(url)

        await eventually(lambda: feed_failures() == before + 2, ACROSS_PROCESSES)
        await first.surface.send(PLACE, OutMessage("a fox"))

        await eventually(
            lambda: (
                [m.text for m in second.playground.store.history("general", "anyone")] == ["a fox"]
            ),
            ACROSS_PROCESSES,
        )


async def cut_for_long(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut every process's following and return once both processes saw it fail. It resumes
    after the first retry pause (1 s; pauses double up to ``FOLLOW_RETRY_SECONDS`` only while
    it keeps failing), so what a test does next may or may not be seen through following."""
    monkeypatch.setattr(playground, "FOLLOW_RETRY_SECONDS", 30.0)
    before = feed_failures()
    cut_following(url)
    await eventually(lambda: feed_failures() == before + 2, ACROSS_PROCESSES)


async def test_a_process_edits_and_finds_by_key_messages_it_missed_while_following_was_cut(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second:
        await cut_for_long(url, monkeypatch)
        ref = await first.surface.send(PLACE, OutMessage("⏳ drawing", key="job9.progress"))
        result = await first.surface.send(PLACE, OutMessage("a hare", key="job8.result"))
        assert second.playground.store.get(ref.message_id) is None
        assert await second.surface.posted(PLACE, "job8.result") == result

        await second.surface.edit(ref, OutMessage("the result"))

        assert [m.text for m in second.playground.store.history("general", "anyone")] == [
            "the result",
            "a hare",
        ]
        await eventually(
            lambda: (
                [m.text for m in first.playground.store.history("general", "x")]
                == ["the result", "a hare"]
            ),
            ACROSS_PROCESSES,
        )


async def test_a_process_no_browser_watches_reads_none_of_what_the_others_post(
    postgres: PostgresCluster,
) -> None:
    """Its browsers watch another channel."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second, "lab"):
        read = await skipped_by_second(first, second, [f"fox {n}" for n in range(5)])

        assert texts(second) == ["held, edited"]
        assert read == 1, "only the message it holds"


async def test_a_process_no_browser_watches_shows_the_changes_of_what_it_holds(
    postgres: PostgresCluster,
) -> None:
    """A job taken over by another process edits (and deletes) the message this one posted."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second:
        ref = await second.surface.send(PLACE, OutMessage("⏳ drawing", key="job9.progress"))

        await first.surface.edit(ref, OutMessage("75%"))
        await eventually(lambda: texts(second) == ["75%"], ACROSS_PROCESSES)
        await first.surface.delete(ref)
        await eventually(lambda: texts(second) == [], ACROSS_PROCESSES)


async def test_a_page_loaded_on_a_process_shows_what_it_skipped_and_then_what_comes(
    postgres: PostgresCluster,
) -> None:
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second:
        await skipped_by_second(first, second, ["a fox", "a hare"])
        assert texts(second) == ["held, edited"]

        async with browser_on(second) as page:
            loaded = await history(page)
            assert [m["text"] for m in loaded["messages"]] == ["held, edited", "a fox", "a hare"]
            await first.surface.send(PLACE, OutMessage("a crow"))
            await eventually(lambda: "a crow" in texts(second), ACROSS_PROCESSES)
            async with page.get(
                "/api/events", params={"channel": "general", "after": loaded["seq"]}
            ) as response:
                stream = SseReader(response)
                assert (await stream.next()).data["type"] == "hello"
                assert await posted_next(stream) == "a crow", "between the page and its stream"
                await first.surface.send(PLACE, OutMessage("an owl"))
                assert await posted_next(stream) == "an owl"


async def test_a_stream_opening_on_a_process_catches_up_and_leaving_stops_reading_all(
    postgres: PostgresCluster,
) -> None:
    """A browser reconnecting its stream (no page load) is shown what was skipped; once the
    channel's last stream ends, the process reads only what it holds there again (a browser
    watching another channel stays)."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second, "lab"):
        await skipped_by_second(first, second, ["a fox"])

        async with watching(second) as stream:
            assert await posted_next(stream) == "a fox"
            await first.surface.send(PLACE, OutMessage("a hare"))
            assert await posted_next(stream) == "a hare"
        assert texts(second) == ["held, edited", "a fox", "a hare"]

        assert await skipped_by_second(first, second, ["an owl"]) == 1, "only what it holds"
        assert "an owl" not in texts(second)


async def in_bench_seen_by_second(
    first: WebAdapter, second: WebAdapter, change: Callable[[], Awaitable[T]]
) -> T:
    """``first`` makes ``change`` (in ``bench0``); returns its result once ``second``, whose
    browsers watch ``general``, has had its notice (it shows a post ``first`` makes in
    ``general`` after it)."""
    done = await change()
    sync = await first.surface.send(PLACE, OutMessage("sync"))
    await eventually(
        lambda: second.playground.store.get(sync.message_id) is not None, ACROSS_PROCESSES
    )
    return done


async def test_a_browser_is_told_of_news_in_a_channel_its_process_reads_nothing_of(
    postgres: PostgresCluster,
) -> None:
    """A process whose browser watches ``general`` reads none of another's messages in
    ``bench0``, yet marks ``bench0`` unread for it from their notices: a new message, a
    result (images gained), not an edit of text. A stream is told once (a stream opened
    after the first mark is told of the result)."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second) as stream:
        counting = counted(second)
        fox = OutMessage("a fox", mention_user_id="u1")

        ref = await in_bench_seen_by_second(first, second, partial(first.surface.send, BENCH, fox))
        events = [e.data for e in await stream.until(lambda d: d["type"] == "post")]
        assert [e for e in events if e["type"] == "activity"] == [
            {"type": "activity", "mention": "u1", "channel": "bench0"}
        ], events
        async with watching(second) as later:
            await in_bench_seen_by_second(
                first, second, lambda: first.surface.edit(ref, OutMessage("a red fox"))
            )
            drawn = OutMessage("a red fox", images=(ImageFile("fox.png", png()),))
            await in_bench_seen_by_second(first, second, lambda: first.surface.edit(ref, drawn))

            seen = [e.data for e in await later.until(lambda d: d["type"] == "post")]
            seen += [e.data for e in await later.until(lambda d: d["type"] == "post")]
            assert [e for e in seen if e["type"] == "activity"] == [
                {"type": "activity", "mention": None, "channel": "bench0"}
            ], seen
            assert [e["type"] for e in seen] == ["post", "activity", "post"]
        events += [e.data for e in await stream.until(lambda d: d["type"] == "post")]
        events += [e.data for e in await stream.until(lambda d: d["type"] == "post")]
        assert [e["type"] for e in events] == ["activity", "post", "post", "post"]
        assert ref.message_id not in messages_read(counting)
        assert second.playground.store.get(ref.message_id) is None


async def test_a_channel_a_process_read_nothing_of_is_listed_and_shown_when_opened(
    postgres: PostgresCluster,
) -> None:
    """A page on ``general`` lists ``bench0``, where another process posted what this one did
    not read; opening ``bench0`` shows what was posted there, then what comes."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second):
        counting = counted(second)
        posted = [
            await in_bench_seen_by_second(
                first, second, partial(first.surface.send, BENCH, OutMessage(text))
            )
            for text in ["a fox", "a hare"]
        ]
        assert posted[0].message_id not in messages_read(counting)
        assert second.playground.store.history("bench0", "u1") == []

        async with browser_on(second) as page:
            assert "bench0" in (await history(page))["channels"]
            loaded = await history(page, "bench0")
            assert [m["text"] for m in loaded["messages"]] == ["a fox", "a hare"]
            async with page.get(
                "/api/events", params={"channel": "bench0", "after": loaded["seq"]}
            ) as response:
                stream = SseReader(response)
                assert (await stream.next()).data["type"] == "hello"
                await first.surface.send(BENCH, OutMessage("an owl"))
                assert await posted_next(stream) == "an owl"


async def test_a_channel_a_process_read_nothing_of_counts_toward_the_most_it_keeps(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(handlers, "MAX_CHANNELS", 2)
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second):
        fox = OutMessage("a fox")
        await in_bench_seen_by_second(first, second, partial(first.surface.send, BENCH, fox))

        async with browser_on(second) as ann:
            status, answer = await post(ann, "/api/message", {"text": "hi", "channel": "spam"})
            assert status == 400, answer
            status, answer = await post(ann, "/api/message", {"text": "hi", "channel": "bench0"})
            assert status == 202, answer


async def test_a_page_shows_what_a_process_holds_while_it_cannot_catch_up(
    postgres: PostgresCluster,
) -> None:
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second:
        await skipped_by_second(first, second, ["a fox"])
        history_of_second = second.playground.history
        assert isinstance(history_of_second, PlaygroundHistory)
        await history_of_second.db.close()

        async with browser_on(second) as page:
            assert [m["text"] for m in (await history(page))["messages"]] == ["held, edited"]


async def test_a_command_another_process_saved_is_revealed_here(postgres: PostgresCluster) -> None:
    """A command posted on one process and handled on another (it claimed it after the first
    died) is shown to everyone when genbot answers it there."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second:
        ann = User("u1", "Ann")
        command = await first.playground.post_user_message(
            ann, PLACE, "/imagine a fox", [], command="imagine"
        )
        assert command.visible_to == ann.id
        assert second.playground.store.get(command.id) is None

        await second.playground.reveal(command.id)

        revealed = second.playground.store.get(command.id)
        assert revealed is not None and revealed.visible_to is None

        def public_on_first() -> bool:
            message = first.playground.store.get(command.id)
            return message is not None and message.visible_to is None

        await eventually(public_on_first, ACROSS_PROCESSES)


async def test_a_keyed_message_another_process_posted_is_found_by_its_key(
    postgres: PostgresCluster,
) -> None:
    """A job whose process died after posting its progress message (or its result) is
    recovered on another process where no browser watches its channel: the message is found,
    not posted again."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second, "lab"):
        progress = await first.surface.send(PLACE, OutMessage("⏳", key="job9.progress"))
        result = await first.surface.send(PLACE, OutMessage("a fox", key="job9.result"))
        await eventually(lambda: "general" in second.playground.channels(), ACROSS_PROCESSES)

        assert await second.surface.posted(PLACE, "job9.progress") == progress
        again = OutMessage("a fox", key="job9.result", may_exist=True)
        assert await second.surface.send(PLACE, again) == result
        assert texts(second) == ["⏳", "a fox"]


async def test_a_thread_is_started_on_a_message_another_process_posted(
    postgres: PostgresCluster,
) -> None:
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second:
        ref = await first.surface.send(PLACE, OutMessage("a fox"))

        inside = await second.surface.start_thread(ref, "about the fox")

        assert inside.thread_id == ref.message_id

        def a_thread_on_first() -> bool:
            message = first.playground.store.get(ref.message_id)
            return message is not None and message.thread_info is not None

        await eventually(a_thread_on_first, ACROSS_PROCESSES)


async def test_a_message_in_a_thread_another_process_started_is_taken(
    postgres: PostgresCluster,
) -> None:
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, browser_on(second) as ann:
        ref = await first.surface.send(PLACE, OutMessage("a fox"))
        await first.surface.start_thread(ref, "about the fox")

        body = {"text": "make it red", "channel": "general", "thread": ref.message_id}
        status, answer = await post(ann, "/api/message", body)

        assert status == 202, answer


async def test_a_form_opened_from_a_message_another_process_posted_draws_on_its_image(
    postgres: PostgresCluster,
) -> None:
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second:
        shown = OutMessage(
            "a fox",
            images=(ImageFile("fox.png", png()),),
            buttons=((Button("Vary (region)", "region", "job9"),),),
        )
        ref = await first.surface.send(PLACE, shown)
        ann = User("u1", "Ann")
        press = ButtonPress(
            user=ann, place=PLACE, message_id=ref.message_id, action="region", ref="job9"
        )
        region = ModalField("mask", "Region", kind="region")
        form = Modal("Vary a region", "region", "job9", (region,))

        await second.surface.open_modal(press, form)

        opened = second.playground.pending_modal(ann.id, form.custom_id)
        assert opened is not None
        assert opened.modal.fields[0].image_url.startswith("/images/")


async def test_a_key_is_looked_up_alone_where_a_notice_was_skipped_and_not_at_all_elsewhere(
    postgres: PostgresCluster,
) -> None:
    """A job recovered on a process no browser watches its channel on: its keyed message is
    looked for by its key where a notice was skipped (never by reading the whole history), and
    in a channel this process holds all of, not looked for in the history at all."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second):
        drawn = OutMessage("a fox", key="job9.result")
        result = await in_bench_seen_by_second(
            first, second, partial(first.surface.send, BENCH, drawn)
        )
        counting = counted(second)

        assert await second.surface.posted(BENCH, "job9.result") == result
        assert await second.surface.posted(BENCH, "job8.result") is None
        assert await second.surface.posted(PLACE, "job8.result") is None

        assert statements(counting, SQL_LOAD) == 0
        assert statements(counting, SQL_KEYED) == 2


async def test_opening_a_channel_a_process_skipped_reads_it_alone_and_no_image_until_asked(
    postgres: PostgresCluster,
) -> None:
    """Its latest messages are read in one statement, not every channel's."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second):
        drawn = OutMessage("a fox", images=(ImageFile("fox.png", png()),))
        await in_bench_seen_by_second(first, second, partial(first.surface.send, BENCH, drawn))
        counting = counted(second)

        async with browser_on(second) as page:
            [fox] = (await history(page, "bench0"))["messages"]
            assert statements(counting, SQL_IMAGES) == 0
            assert statements(counting, SQL_LOAD) == 0
            assert statements(counting, SQL_CHANNEL) == 1
            async with page.get(fox["images"][0]["url"]) as image:
                assert image.status == 200 and await image.read() == png()
        assert statements(counting, SQL_IMAGES) == 1


async def test_what_a_process_shows_of_a_channel_it_skipped_is_not_marked_unread_again(
    postgres: PostgresCluster,
) -> None:
    """A message whose notice marked its channel unread is marked once: not again when a
    page opens the channel, nor when the process looks for it by its key (a stream opened
    after the marks, which no mark of ``bench0`` reached yet, is told of none)."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second) as stream:
        for text, key in (("a fox", None), ("a hare", "job9.result")):
            shown = OutMessage(text, key=key)
            await in_bench_seen_by_second(first, second, partial(first.surface.send, BENCH, shown))
        seen = await stream.until(lambda d: d["type"] == "post")
        seen += await stream.until(lambda d: d["type"] == "post")
        assert [e.data["type"] for e in seen] == ["activity", "post", "post"]

        async with watching(second) as later:
            assert await second.surface.posted(BENCH, "job9.result") is not None
            async with browser_on(second) as page:
                loaded = await history(page, "bench0")
                assert [m["text"] for m in loaded["messages"]] == ["a fox", "a hare"]
            await first.surface.send(PLACE, OutMessage("after"))

            after = await later.until(lambda d: d["type"] == "post", ACROSS_PROCESSES)
            assert [e.data["type"] for e in after] == ["post"], [e.data for e in after]


async def in_bench_skipped_by_second(first: WebAdapter, second: WebAdapter, text: str) -> str:
    """``first`` posts ``text`` in ``bench0``; returns its id once ``second`` had its notice
    (``second`` shows an edit ``first`` makes after it of a message ``second`` holds)."""
    held = await second.surface.send(PLACE, OutMessage("held"))
    posted = await first.surface.send(BENCH, OutMessage(text))
    await first.surface.edit(held, OutMessage("held, edited"))

    def edit_shown() -> bool:
        message = second.playground.store.get(held.message_id)
        return message is not None and message.text == "held, edited"

    await eventually(edit_shown, ACROSS_PROCESSES)
    return posted.message_id


async def test_a_channel_a_page_read_without_opening_its_stream_stops_being_followed(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(playground, "WATCH_GRACE_SECONDS", 0.0)
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, browser_on(second) as script:
        await history(script, "bench0")

        fox = await in_bench_skipped_by_second(first, second, "a fox")

        assert second.playground.store.get(fox) is None


async def test_a_channel_whose_stream_was_refused_stops_being_followed(
    postgres: PostgresCluster,
) -> None:
    url = postgres.create_schema()
    async with (
        process(url) as first,
        process(url) as second,
        browser_on(second) as greedy,
        contextlib.AsyncExitStack() as streams,
    ):
        for _ in range(MAX_STREAMS_PER_USER):
            response = await streams.enter_async_context(
                greedy.get("/api/events", params={"channel": "lab"})
            )
            assert (await SseReader(response).next()).data["type"] == "hello"
        await history(greedy, "bench0")
        async with greedy.get("/api/events", params={"channel": "bench0"}) as refused:
            assert refused.status == 429

        fox = await in_bench_skipped_by_second(first, second, "a fox")

        assert second.playground.store.get(fox) is None


async def test_a_private_message_elsewhere_is_marked_unread_only_for_its_user(
    postgres: PostgresCluster,
) -> None:
    """The unread mark a notice gives (the message not read) reaches only those who may see
    the message: a private command's user, not another user watching the same channel."""
    url = postgres.create_schema()
    async with (
        process(url) as first,
        process(url) as second,
        browser_on(second) as ann,
        browser_on(second) as bob,
    ):
        readers = []
        ann_id = (await history(ann))["me"]["id"]
        async with contextlib.AsyncExitStack() as streams:
            for browser in (ann, bob):
                response = await streams.enter_async_context(
                    browser.get("/api/events", params={"channel": "general"})
                )
                reader = SseReader(response)
                assert (await reader.next()).data["type"] == "hello"
                readers.append(reader)
            command = partial(
                first.playground.post_user_message,
                User(ann_id, "Ann"),
                BENCH,
                "/imagine a fox",
                [],
                command="imagine",
            )
            await in_bench_seen_by_second(first, second, command)

            seen_by_ann, seen_by_bob = [
                [e.data["type"] for e in await reader.until(lambda d: d["type"] == "post")]
                for reader in readers
            ]
            assert seen_by_ann == ["activity", "post"]
            assert seen_by_bob == ["post"]


def rename_table(url: str, table: str, name: str) -> None:
    """Rename ``table`` to ``name``: every statement naming it fails until it is renamed back
    (a real database fault)."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"ALTER TABLE {table} RENAME TO {name}")


async def test_a_stream_whose_catch_up_failed_is_shown_what_was_skipped_once_it_can_be_read(
    postgres: PostgresCluster,
) -> None:
    """The history could not be read when the stream opened (the browser was shown what the
    process holds); the catch-up is tried again while the stream stays open."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second:
        await skipped_by_second(first, second, ["a fox"])
        counting = counted(second)
        rename_table(url, "playground_messages", "hidden")

        async with watching(second) as stream:
            assert statements(counting, SQL_CHANNEL) >= 1 and texts(second) == ["held, edited"]
            rename_table(url, "hidden", "playground_messages")
            assert await posted_next(stream) == "a fox"


async def test_a_failed_catch_up_is_not_tried_again_once_no_browser_watches_the_channel(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(playground, "CATCH_UP_RETRY_SECONDS", 0.05)
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second:
        await skipped_by_second(first, second, ["a fox"])
        counting = counted(second)
        rename_table(url, "playground_messages", "hidden")

        def retrying() -> bool:
            return any(
                task.get_name() == "genbot-playground-catch-up" and not task.done()
                for task in asyncio.all_tasks()
            )

        async with watching(second):
            await eventually(lambda: statements(counting, SQL_CHANNEL) >= 3, ACROSS_PROCESSES)
            assert retrying()
        await eventually(lambda: not retrying(), ACROSS_PROCESSES)
        rename_table(url, "hidden", "playground_messages")

        assert texts(second) == ["held, edited"]


async def saved_while_following_was_cut(
    url: str, monkeypatch: pytest.MonkeyPatch, save: Callable[[], Awaitable[object]]
) -> None:
    """Cut every process's following and ``save`` before any follows again (its first retry
    waits 5 s; no process followed when ``save`` was done, checked): the only way the
    processes learn of it is the catch-up once following resumes."""
    monkeypatch.setattr(playground, "backoff", partial(backoff, first=5.0))
    before = feed_failures()
    cut_following(url)
    await eventually(lambda: feed_failures() == before + 2, ACROSS_PROCESSES)
    await save()
    assert listening(url) == 0, "a process followed again before the save was done"


async def test_following_that_resumes_marks_unread_only_what_was_saved_while_it_was_cut(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message whose notice marked its channel unread is not marked again by what following
    reads once it resumes after a cut; one saved while it was cut is (seen by a stream opened
    after the first mark, which no mark of ``bench0`` reached yet)."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second) as stream:
        fox = OutMessage("a fox")
        await in_bench_seen_by_second(first, second, partial(first.surface.send, BENCH, fox))
        seen = await stream.until(lambda d: d["type"] == "post")
        assert [e.data["type"] for e in seen] == ["activity", "post"]

        async with watching(second) as later:
            hare = partial(
                first.surface.send, Place("web", "web", "bench1", None), OutMessage("a hare")
            )
            await saved_while_following_was_cut(url, monkeypatch, hare)
            await first.surface.send(PLACE, OutMessage("after"))

            after = await later.until(lambda d: d["type"] == "post", ACROSS_PROCESSES)
            marks = [(e.data["type"], e.data.get("channel")) for e in after]
            assert marks == [("activity", "bench1"), ("post", "general")], [e.data for e in after]


@asynccontextmanager
async def stream_of(page: ClientSession, channel: str = "general") -> AsyncIterator[SseReader]:
    """``page``'s event stream on ``channel``, from its ``hello`` on."""
    async with page.get("/api/events", params={"channel": channel}) as response:
        assert response.status == 200, await response.text()
        stream = SseReader(response)
        assert (await stream.next()).data["type"] == "hello"
        yield stream


async def told_after(stream: SseReader) -> list[tuple[str, str, str | None]]:
    """What ``stream`` (on ``general``) is told until ``after`` is posted there, each event as
    its type, channel and mention."""
    *told, posted = await stream.until(lambda d: d["type"] == "post", ACROSS_PROCESSES)
    assert posted.data["message"]["text"] == "after", posted.data
    return [(e.data["type"], e.data["channel"], e.data.get("mention")) for e in told]


async def told_before_after(
    first: WebAdapter, stream: SseReader
) -> list[tuple[str, str, str | None]]:
    """``first`` posts ``after`` in ``general``: what ``stream`` (on ``general``) was told
    before that post (:func:`told_after`)."""
    await first.surface.send(PLACE, OutMessage("after"))
    return await told_after(stream)


async def marked_once(
    first: WebAdapter, page: ClientSession, stream: SseReader, mark: tuple[str, str, str | None]
) -> None:
    """``stream`` (``page``'s, on ``general``) was told ``mark``, and a stream ``page`` opens
    now (a reload) is told nothing more: the hub tells a stream of a channel once, so only a
    stream opened after the mark sees it sent again."""
    async with stream_of(page) as reloaded:
        assert await told_before_after(first, stream) == [mark]
        assert await told_after(reloaded) == [], "marked again"


async def test_a_skipped_notice_does_not_keep_what_is_saved_while_following_is_cut_unmarked(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notice was skipped in ``bench0`` before a page on ``general`` opened (no mark of it
    is on that page). Once following resumes after a cut, a message saved in ``bench0``
    meanwhile is marked unread for the page, with its mention; the skipped one is not marked
    again. That catch-up read every channel: none is read again when the page opens it or a
    key is looked up there."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, browser_on(second) as ann:
        await in_bench_skipped_by_second(first, second, "a fox")
        ann_id = (await history(ann))["me"]["id"]
        async with stream_of(ann) as stream:
            for_ann = OutMessage("a hare", mention_user_id=ann_id)
            await saved_while_following_was_cut(
                url, monkeypatch, partial(first.surface.send, BENCH, for_ann)
            )

            assert await told_before_after(first, stream) == [("activity", "bench0", ann_id)]

        counting = counted(second)
        assert await second.surface.posted(BENCH, "job9.result") is None
        loaded = await history(ann, "bench0")
        assert [m["text"] for m in loaded["messages"]] == ["a fox", "a hare"]
        assert statements(counting, SQL_KEYED) == statements(counting, SQL_CHANNEL) == 0


class ReadsHeld(CountingDatabase):
    """A counting database on which each read made with ``held`` (one channel's latest
    messages, a catch-up of that channel: :data:`SQL_CHANNEL`; messages by id:
    :data:`SQL_SOME`; one message asked for by id, :data:`SQL_ONE`, or by its key,
    :data:`SQL_KEYED`) waits until :attr:`released` is set (``answered``: after the database
    answered it, so it returns what was saved before it waited)."""

    def __init__(self, inner: Database, held: str = SQL_CHANNEL, *, answered: bool = False) -> None:
        super().__init__(inner)
        self.held = held.partition("{")[0]
        self.answered = answered
        self.released = asyncio.Event()
        self.holding = 0
        """How many reads are waiting."""

    async def fetch_all(
        self, sql: str, values: Values = (), *, repeatable: bool = True
    ) -> list[Row]:
        return await self._read(sql, partial(super().fetch_all, sql, values, repeatable=repeatable))

    async def fetch_one(
        self, sql: str, values: Values = (), *, repeatable: bool = True
    ) -> Row | None:
        return await self._read(sql, partial(super().fetch_one, sql, values, repeatable=repeatable))

    async def _read(self, sql: str, read: Callable[[], Awaitable[T]]) -> T:
        held = sql.startswith(self.held)
        if held and not self.answered:
            await self._hold()
        found = await read()
        if held and self.answered:
            await self._hold()
        return found

    async def _hold(self) -> None:
        self.holding += 1
        await self.released.wait()
        self.holding -= 1


async def test_following_that_resumes_while_a_channel_is_caught_up_does_not_mark_it_again(
    postgres: PostgresCluster,
) -> None:
    """A page opens ``bench0``, where a notice was skipped, and following resumes after a cut
    while that channel's catch-up still reads: the catch-up of every channel, done first, does
    not mark the skipped message unread again (seen by a stream opened after its mark)."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second) as stream:
        fox = await in_bench_seen_by_second(
            first, second, partial(first.surface.send, BENCH, OutMessage("a fox"))
        )
        seen = await stream.until(lambda d: d["type"] == "post")
        assert [e.data["type"] for e in seen] == ["activity", "post"]
        history_of_second = second.playground.history
        assert isinstance(history_of_second, PlaygroundHistory)
        held = ReadsHeld(history_of_second.db)
        history_of_second.db = held

        async with watching(second) as later, browser_on(second) as page:
            opening = asyncio.create_task(history(page, "bench0"))
            await eventually(lambda: held.holding == 1, ACROSS_PROCESSES)
            before = feed_failures()
            cut_following(url)
            await eventually(lambda: feed_failures() == before + 2, ACROSS_PROCESSES)
            await eventually(
                lambda: second.playground.store.get(fox.message_id) is not None, ACROSS_PROCESSES
            )
            held.released.set()
            assert [m["text"] for m in (await opening)["messages"]] == ["a fox"]
            await first.surface.send(PLACE, OutMessage("after"))

            after = await later.until(lambda d: d["type"] == "post", ACROSS_PROCESSES)
            assert [e.data["type"] for e in after] == ["post"], [e.data for e in after]


KEPT = 10
"""The fewest messages a channel keeps (``[web] messages_per_channel``)."""


async def test_a_channel_read_before_every_channel_was_caught_up_does_not_mark_it_again(
    postgres: PostgresCluster,
) -> None:
    """A page opens ``bench0`` (a channel keeps ten messages), where a notice was skipped, and
    that catch-up's read is answered; ten messages saved there then push the skipped one
    out, and following resumes after a cut, catching up every channel (which forgets the
    skipped notice, as the message is gone). The channel's catch-up, done after it, does
    not mark the skipped message unread again (seen by a stream opened after its mark)."""
    url = postgres.create_schema()
    async with (
        process(url, messages_per_channel=KEPT) as first,
        process(url, messages_per_channel=KEPT) as second,
        watching(second),
        browser_on(second) as page,
    ):
        fox = await in_bench_skipped_by_second(first, second, "a fox")
        history_of_second = second.playground.history
        assert isinstance(history_of_second, PlaygroundHistory)
        held = ReadsHeld(history_of_second.db, answered=True)
        history_of_second.db = held
        opening = asyncio.create_task(history(page, "bench0"))
        await eventually(lambda: held.holding == 1, ACROSS_PROCESSES)
        hares = [f"a hare {n}" for n in range(KEPT)]
        newer = [await first.surface.send(BENCH, OutMessage(text)) for text in hares]
        await eventually(
            lambda: second.playground.store.get(newer[-1].message_id) is not None,
            ACROSS_PROCESSES,
        )
        before = feed_failures()
        cut_following(url)
        await eventually(lambda: feed_failures() == before + 2, ACROSS_PROCESSES)
        await eventually(lambda: listening(url) == 2, ACROSS_PROCESSES)
        caught_up = await first.surface.send(PLACE, OutMessage("sync"))
        await eventually(
            lambda: second.playground.store.get(caught_up.message_id) is not None,
            ACROSS_PROCESSES,
        )

        async with watching(second) as later:
            held.released.set()
            assert [m["text"] for m in (await opening)["messages"]] == hares
            assert second.playground.store.get(fox) is None

            assert await told_before_after(first, later) == []


async def test_a_channel_read_after_every_channel_was_caught_up_marks_what_it_reads_first(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page opens ``bench0``, where a notice was skipped, and that catch-up waits to read;
    following resumes after a cut, catching up every channel, and then a message is saved in
    ``bench0``. The channel's catch-up reads it before its notice is read (which then finds
    it shown): that catch-up marks it unread, once, though it began before the catch-up of
    every channel."""
    url = postgres.create_schema()
    async with (
        process(url) as first,
        process(url) as second,
        watching(second),
        browser_on(second) as page,
        browser_on(second) as ann,
    ):
        await in_bench_skipped_by_second(first, second, "a fox")
        history_of_second = second.playground.history
        assert isinstance(history_of_second, PlaygroundHistory)
        of_channel = ReadsHeld(history_of_second.db, SQL_CHANNEL)
        history_of_second.db = of_channel
        opening = asyncio.create_task(history(page, "bench0"))
        await eventually(lambda: of_channel.holding == 1, ACROSS_PROCESSES)
        saved: list[MessageRef] = []

        async def sync() -> None:
            saved.append(await first.surface.send(PLACE, OutMessage("sync")))

        await saved_while_following_was_cut(url, monkeypatch, sync)
        await eventually(
            lambda: second.playground.store.get(saved[0].message_id) is not None,
            ACROSS_PROCESSES,
        )
        by_id = ReadsHeld(of_channel, SQL_SOME)
        history_of_second.db = by_id
        async with stream_of(ann) as stream:
            await first.surface.send(BENCH, OutMessage("a hare"))
            await eventually(lambda: by_id.holding == 1, ACROSS_PROCESSES)
            of_channel.released.set()
            assert [m["text"] for m in (await opening)["messages"]] == ["a fox", "a hare"]
            by_id.released.set()

            await marked_once(first, ann, stream, ("activity", "bench0", None))


@pytest.mark.parametrize("asked", ["by id", "by key"])
async def test_a_message_asked_for_before_every_channel_was_caught_up_is_not_marked_again(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch, asked: str
) -> None:
    """The process that skipped a message's notice in ``bench0`` (a channel keeps ten
    messages), which marked it unread, is asked for it (by id, or by its key), and that read is
    answered; ten messages saved there while following is cut then push it out, and the
    catch-up of every channel once following resumes forgets the skipped notice (the message
    is gone). The message read is not marked unread again (seen by a stream opened after that
    catch-up)."""
    url = postgres.create_schema()
    async with (
        process(url, messages_per_channel=KEPT) as first,
        process(url, messages_per_channel=KEPT) as second,
        watching(second) as stream,
    ):
        fox = OutMessage("a fox", key="job9.result")
        ref = await in_bench_seen_by_second(first, second, partial(first.surface.send, BENCH, fox))
        seen = await stream.until(lambda d: d["type"] == "post")
        assert [e.data["type"] for e in seen] == ["activity", "post"]
        history_of_second = second.playground.history
        assert isinstance(history_of_second, PlaygroundHistory)
        asked_with = SQL_ONE if asked == "by id" else SQL_KEYED
        held = ReadsHeld(history_of_second.db, asked_with, answered=True)
        history_of_second.db = held
        asking = asyncio.create_task(
            second.playground.message(ref.message_id)
            if asked == "by id"
            else second.surface.posted(BENCH, "job9.result")
        )
        await eventually(lambda: held.holding == 1, ACROSS_PROCESSES)
        newer: list[MessageRef] = []

        async def push_out() -> None:
            for n in range(KEPT):
                newer.append(await first.surface.send(BENCH, OutMessage(f"a hare {n}")))

        await saved_while_following_was_cut(url, monkeypatch, push_out)
        await eventually(
            lambda: second.playground.store.get(newer[-1].message_id) is not None,
            ACROSS_PROCESSES,
        )

        async with watching(second) as later:
            held.released.set()
            await asking
            assert second.playground.store.get(ref.message_id) is None

            assert await told_before_after(first, later) == []


async def opened_before_its_notice_is_read(
    second: WebAdapter, page: ClientSession, save: Callable[[], Awaitable[object]]
) -> dict[str, Any]:
    """``page`` opens ``bench0`` on ``second``, and ``save`` is done while that catch-up waits;
    the catch-up reads what was saved before ``second`` reads it by its notice (which waits
    until then). What the page loaded."""
    history_of_second = second.playground.history
    assert isinstance(history_of_second, PlaygroundHistory)
    by_id = ReadsHeld(history_of_second.db, SQL_SOME)
    of_channel = ReadsHeld(by_id, SQL_CHANNEL)
    history_of_second.db = of_channel
    opening = asyncio.create_task(history(page, "bench0"))
    await eventually(lambda: of_channel.holding == 1, ACROSS_PROCESSES)
    await save()
    await eventually(lambda: by_id.holding == 1, ACROSS_PROCESSES)
    of_channel.released.set()
    loaded = await opening
    by_id.released.set()
    return loaded


@pytest.mark.parametrize("when", ["following is cut", "its notice is on its way"])
async def test_a_channel_caught_up_marks_unread_what_its_process_had_no_notice_of(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """A notice was skipped in ``bench0`` before ann's page on ``general`` opened. A message
    for ann is saved in ``bench0``, and a page on the same process opens ``bench0`` before
    the process read that message by a notice: while following is cut, or while following is
    up and the notice is on its way (it then finds the message shown). Ann's page is marked
    unread with the mention, by that catch-up (the one once following resumes finds the
    message shown), once; the skipped message is not marked again."""
    url = postgres.create_schema()
    async with (
        process(url) as first,
        process(url) as second,
        browser_on(second) as ann,
        browser_on(second) as bob,
    ):
        await in_bench_skipped_by_second(first, second, "a fox")
        ann_id = (await history(ann))["me"]["id"]
        for_ann = partial(first.surface.send, BENCH, OutMessage("a hare", mention_user_id=ann_id))
        async with stream_of(ann) as stream:
            if when == "following is cut":
                await saved_while_following_was_cut(url, monkeypatch, for_ann)
                loaded = await history(bob, "bench0")
                assert listening(url) == 0, "following resumed before the page opened bench0"
            else:
                loaded = await opened_before_its_notice_is_read(second, bob, for_ann)
            assert [m["text"] for m in loaded["messages"]] == ["a fox", "a hare"]

            await marked_once(first, ann, stream, ("activity", "bench0", ann_id))


@pytest.mark.parametrize("asked", ["by id", "by key"])
async def test_a_message_asked_for_while_following_is_cut_is_marked_unread(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch, asked: str
) -> None:
    """While following is cut, a message for ann is saved in ``bench0`` and the process that
    did not read it is asked for it (by id, or by its key): ann's page on ``general`` is
    marked unread with the mention (then: the catch-up once following resumes finds the
    message shown), once."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, browser_on(second) as ann:
        ann_id = (await history(ann))["me"]["id"]
        async with stream_of(ann) as stream:
            for_ann = OutMessage("a hare", mention_user_id=ann_id, key="job9.result")
            saved: list[MessageRef] = []

            async def save() -> None:
                saved.append(await first.surface.send(BENCH, for_ann))

            await saved_while_following_was_cut(url, monkeypatch, save)
            if asked == "by id":
                shown = await second.playground.message(saved[0].message_id)
                assert shown is not None and shown.text == "a hare"
            else:
                assert await second.surface.posted(BENCH, "job9.result") == saved[0]
            assert listening(url) == 0, "following resumed before the message was asked for"

            await marked_once(first, ann, stream, ("activity", "bench0", ann_id))


@pytest.mark.parametrize("saved", ["deleted", "private reply"])
async def test_what_its_saver_never_marks_is_not_marked_when_read_after_a_cut(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch, saved: str
) -> None:
    """What a process saved while following was cut is read by the catch-up once it resumes,
    as new: a message for ann deleted meanwhile, or a private reply to her ("only you can see
    this") marks ann's page unread no more than its saving process marked it."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, browser_on(second) as ann:
        ann_id = (await history(ann))["me"]["id"]
        async with stream_of(ann) as stream:

            async def save() -> None:
                if saved == "deleted":
                    for_ann = OutMessage("a hare", mention_user_id=ann_id)
                    await first.surface.delete(await first.surface.send(BENCH, for_ann))
                else:
                    origin = Command(user=User(ann_id, "Ann"), place=BENCH, name="imagine")
                    await first.surface.send_private(origin, OutMessage("only you"))

            await saved_while_following_was_cut(url, monkeypatch, save)
            assert await told_before_after(first, stream) == []


@pytest.mark.parametrize("saved", ["deleted", "private reply"])
async def test_what_its_saver_never_marks_is_not_marked_when_read_by_its_notice(
    postgres: PostgresCluster, saved: str
) -> None:
    """A page on the process watches ``bench0``, so what other processes save there is read
    by its notice: a message for ann deleted before that read is made, or a private reply to
    her ("only you can see this"), marks ann's page on ``general`` unread no more than its
    saving process marked it."""
    url = postgres.create_schema()
    async with (
        process(url) as first,
        process(url) as second,
        watching(second, "bench0"),
        browser_on(second) as ann,
    ):
        ann_id = (await history(ann))["me"]["id"]
        history_of_second = second.playground.history
        assert isinstance(history_of_second, PlaygroundHistory)
        by_id = ReadsHeld(history_of_second.db, SQL_SOME)
        history_of_second.db = by_id
        async with stream_of(ann) as stream:
            if saved == "deleted":
                for_ann = OutMessage("a hare", mention_user_id=ann_id)
                ref = await first.surface.send(BENCH, for_ann)
                await eventually(lambda: by_id.holding == 1, ACROSS_PROCESSES)
                await first.surface.delete(ref)
            else:
                origin = Command(user=User(ann_id, "Ann"), place=BENCH, name="imagine")
                await first.surface.send_private(origin, OutMessage("only you"))
                await eventually(lambda: by_id.holding == 1, ACROSS_PROCESSES)
            by_id.released.set()

            assert await told_before_after(first, stream) == []


async def test_a_playground_opened_again_owes_no_catch_up_of_what_it_skipped_before(
    postgres: PostgresCluster,
) -> None:
    """Opening reads the whole history: a channel where a notice was skipped before the
    playground was closed is not read again when a page opens it or a key is looked up
    there."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, browser_on(second) as page:
        await in_bench_skipped_by_second(first, second, "a fox")
        await second.playground.close()
        await second.playground.open()

        counting = counted(second)
        assert await second.surface.posted(BENCH, "job9.result") is None
        loaded = await history(page, "bench0")
        assert [m["text"] for m in loaded["messages"]] == ["a fox"]
        assert statements(counting, SQL_KEYED) == statements(counting, SQL_CHANNEL) == 0


class ReadsFail(CountingDatabase):
    """A counting database on which reading the whole history (:data:`SQL_LOAD`) or messages
    by id (:data:`SQL_SOME`) raises :attr:`error` while it is set."""

    def __init__(self, inner: Database, error: Exception) -> None:
        super().__init__(inner)
        self.error: Exception | None = error

    async def fetch_all(
        self, sql: str, values: Values = (), *, repeatable: bool = True
    ) -> list[Row]:
        if self.error is not None and sql.startswith(
            (SQL_LOAD.partition("{")[0], SQL_SOME.partition("{")[0])
        ):
            raise self.error
        return await super().fetch_all(sql, values, repeatable=repeatable)


@pytest.mark.parametrize(
    "error", [OSError("no route to host"), ValueError("a bug"), RuntimeError("a bug")]
)
async def test_following_that_fails_otherwise_than_its_feed_follows_again(
    postgres: PostgresCluster,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    error: Exception,
) -> None:
    """Reading what a notice names fails with something other than a storage error (another
    database error, or a bug): following starts again, after pauses that double while its
    catch-up keeps failing, and then shows what was saved meanwhile and what comes. A bug
    (whatever its class) is logged with its traceback, an outage without."""
    pauses: list[int] = []

    def recorded(failures: int, *, most: float) -> float:
        pauses.append(failures)
        return 0.05

    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second) as stream:
        history_of_second = second.playground.history
        assert isinstance(history_of_second, PlaygroundHistory)
        failing = ReadsFail(history_of_second.db, error)
        history_of_second.db = failing
        monkeypatch.setattr(playground, "backoff", recorded)
        await first.surface.send(PLACE, OutMessage("a fox"))

        await eventually(lambda: len(pauses) >= 3, ACROSS_PROCESSES)
        failing.error = None
        assert pauses[:3] == [1, 2, 3]
        assert await posted_next(stream) == "a fox"
        await first.surface.send(PLACE, OutMessage("a hare"))
        assert await posted_next(stream) == "a hare"
    failed = [r for r in caplog.records if "history failed" in r.getMessage()]
    if isinstance(error, OSError):
        assert failed == []
    else:
        assert failed and all(r.exc_info is not None for r in failed)


async def test_a_message_read_when_it_is_asked_for_is_not_marked_unread_again(
    postgres: PostgresCluster,
) -> None:
    """Seen by a stream opened after the message's mark (which no mark of ``bench0`` reached
    yet)."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second, watching(second) as stream:
        fox = OutMessage("a fox")
        ref = await in_bench_seen_by_second(first, second, partial(first.surface.send, BENCH, fox))
        seen = await stream.until(lambda d: d["type"] == "post")
        assert [e.data["type"] for e in seen] == ["activity", "post"]

        async with watching(second) as later:
            shown = await second.playground.message(ref.message_id)
            assert shown is not None and shown.text == "a fox"
            await first.surface.send(PLACE, OutMessage("after"))

            after = await later.until(lambda d: d["type"] == "post", ACROSS_PROCESSES)
            assert [e.data["type"] for e in after] == ["post"], [e.data for e in after]


async def anns_fox_held_by_second(
    first: WebAdapter, second: WebAdapter, ann: User
) -> tuple[WebMessage, str]:
    """Ann posts a fox (with its image) on ``first``, then genbot a hare; returns once
    ``second`` holds both and the fox's image: her message, and its image's key."""
    fox = StoredFile("fox.png", png(), "image/png")
    mine = await first.playground.post_user_message(ann, PLACE, "a fox by Ann", [fox])
    await first.surface.send(PLACE, OutMessage("a hare"))
    await eventually(lambda: texts(second) == ["a fox by Ann", "a hare"], ACROSS_PROCESSES)
    key = str(mine.images[0]["key"])
    assert await second.playground.image_file(key) is not None
    return mine, key


async def test_a_user_forgotten_on_one_process_is_dropped_by_every_other(
    postgres: PostgresCluster,
) -> None:
    """``/forget-me`` handled on one process deletes the user's messages from the history; the
    others drop what they hold of them too (told with the deletion): their messages, genbot's
    private answers to them, the images only those showed and the export they had still to
    download, deleted from the browsers showing them there. Another user's message stays."""
    url = postgres.create_schema()
    ann = User("web-ann000000000", "Ann")
    async with process(url) as first, process(url) as second, watching(second) as stream:
        mine, key = await anns_fox_held_by_second(first, second, ann)
        asked = await second.playground.post_user_message(
            ann, PLACE, "/jobs export", [], command="jobs.export"
        )
        export = Command(user=ann, place=PLACE, name="jobs.export", context=WebContext(asked.id))
        await second.surface.send_file_privately(export, "Your jobs", "jobs.zip", b"PK")
        [answer] = [
            m for m in second.playground.store.history("general", ann.id) if m.kind == "ephemeral"
        ]
        assert second.playground.downloads.owned_by(ann.id) == 1

        await first.surface.forget_user(ann.id)

        await eventually(lambda: texts(second) == ["a hare"], ACROSS_PROCESSES)
        for message in (mine, asked, answer):
            assert second.playground.store.get(message.id) is None
        assert second.playground.store.image(key) is None
        assert await second.playground.image_file(key) is None
        assert second.playground.downloads.owned_by(ann.id) == 0
        seen = await stream.until(lambda d: d["type"] == "delete", ACROSS_PROCESSES)
        assert [e.data["message"]["id"] for e in seen if e.data["type"] == "delete"] == [mine.id]
        async with browser_on(second) as page:
            assert [m["text"] for m in (await history(page))["messages"]] == ["a hare"]


async def test_an_export_whose_command_another_process_forgot_is_refused_and_not_kept(
    postgres: PostgresCluster,
) -> None:
    """The command asking for an export was deleted (``/forget-me`` on another process) before
    the export was ready: the process that made it, which holds that command no more (it has
    had the deletion's notice, in order before a later message), reads the history, finds it
    gone, and hands nothing over: no file to download, no answer kept that would name the
    forgotten user again."""
    url = postgres.create_schema()
    ann = User("web-ann000000000", "Ann")
    async with process(url) as first, process(url) as second, watching(second):
        asked = await first.playground.post_user_message(
            ann, PLACE, "/jobs export", [], command="jobs.export"
        )
        await first.surface.forget_user(ann.id)
        await first.surface.send(PLACE, OutMessage("after the deletion"))
        await eventually(lambda: "after the deletion" in texts(second), ACROSS_PROCESSES)
        export = Command(user=ann, place=PLACE, name="jobs.export", context=WebContext(asked.id))

        await second.surface.send_file_privately(export, "Your jobs", "jobs.zip", b"PK")

        assert second.playground.downloads.owned_by(ann.id) == 0
        journal = second.playground.journal
        assert journal is not None
        assert await journal.about_user(ann.id, dm_channel(ann.id)) == ([], [])
        [told] = [
            m for m in second.playground.store.history("general", ann.id) if m.kind == "ephemeral"
        ]
        assert told.kind == "ephemeral" and "`jobs.zip` is not handed over" in told.text


class FeedHeldDown(CountingDatabase):
    """A database whose following (``LISTEN``) starts only while :attr:`up` is set: a feed
    cut while it is clear stays down until it is set."""

    def __init__(self, inner: Database) -> None:
        super().__init__(inner)
        self.up = asyncio.Event()

    async def listen(self, channel: str) -> AsyncIterator[str | None]:
        await self.up.wait()
        async for payload in self.inner.listen(channel):
            yield payload


async def cut_and_held_down(url: str, second: WebAdapter) -> FeedHeldDown:
    """Cut every process's feed, and hold ``second``'s down (until the returned feed's
    :attr:`~FeedHeldDown.up` is set); returns once the other one follows again."""
    history_of_second = second.playground.history
    assert isinstance(history_of_second, PlaygroundHistory)
    feed = FeedHeldDown(history_of_second.db)
    history_of_second.db = feed
    before = feed_failures()
    cut_following(url)
    await eventually(lambda: feed_failures() == before + 2, ACROSS_PROCESSES)
    await eventually(lambda: listening(url) == 1, ACROSS_PROCESSES)
    return feed


async def test_a_user_forgotten_while_a_process_s_feed_was_down_is_dropped_when_it_resumes(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second process's feed is cut, and held down until ``/forget-me`` on the first is
    done: it never has the forget's notice, yet once following resumes its catch-up drops
    what the history lost (the user's message, the image only it showed), from the browser
    watching there too; another user's message stays."""
    monkeypatch.setattr(playground, "FOLLOW_RETRY_SECONDS", 2.0)
    url = postgres.create_schema()
    ann = User("web-ann000000000", "Ann")
    async with process(url) as first, process(url) as second, watching(second) as stream:
        mine, key = await anns_fox_held_by_second(first, second, ann)
        feed = await cut_and_held_down(url, second)

        await first.surface.forget_user(ann.id)
        assert texts(second) == ["a fox by Ann", "a hare"]
        feed.up.set()

        await eventually(lambda: texts(second) == ["a hare"], ACROSS_PROCESSES)
        assert second.playground.store.get(mine.id) is None
        assert second.playground.store.image(key) is None
        seen = await stream.until(lambda d: d["type"] == "delete", ACROSS_PROCESSES)
        assert [e.data["message"]["id"] for e in seen if e.data["type"] == "delete"] == [mine.id]


async def test_a_message_naming_a_forgotten_user_only_in_its_thread_s_name_is_dropped_elsewhere(
    postgres: PostgresCluster,
) -> None:
    """genbot's message names Ann nowhere but in the name of the thread started on it: the
    history deletes it with her other messages (it holds her id), and the process told of the
    forget drops it too, as the history found it, with the form Ann had open there (its
    submission is told why it is refused)."""
    url = postgres.create_schema()
    ann = User("web-ann000000000", "Ann")
    async with process(url) as first, process(url) as second, watching(second):
        ref = await first.surface.send(PLACE, OutMessage("a fox"))
        await first.surface.start_thread(ref, f"the fox {ann.id} asked for")
        await first.surface.send(PLACE, OutMessage("a hare"))

        def threaded_on_second() -> bool:
            message = second.playground.store.get(ref.message_id)
            return message is not None and message.thread_info is not None

        await eventually(threaded_on_second, ACROSS_PROCESSES)
        await eventually(lambda: texts(second) == ["a fox", "a hare"], ACROSS_PROCESSES)
        form = PendingModal(zoom_modal("settings", "user"), PLACE, None)
        second.playground.remember_modal(ann.id, form)

        await first.surface.forget_user(ann.id)

        await eventually(lambda: texts(second) == ["a hare"], ACROSS_PROCESSES)
        assert first.playground.store.get(ref.message_id) is None
        custom_id = form.modal.custom_id
        assert second.playground.pending_modal(ann.id, custom_id) is None
        assert second.playground.form_closed(ann.id, custom_id)


async def test_the_files_and_forms_of_a_user_forgotten_while_a_feed_was_down_go_when_it_resumes(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second process holds Ann's upload not sent yet, her export to download, her form
    and a private note to her it never saved, and Bob's upload; its feed is held down while
    the first forgets Ann, and Ann uploads again there meanwhile. Once following resumes, it
    finds the forget marked in the history and drops what it held of Ann before it; her
    upload after it and Bob's stay."""
    monkeypatch.setattr(playground, "FOLLOW_RETRY_SECONDS", 2.0)
    url = postgres.create_schema()
    ann, bob = User("web-ann000000000", "Ann"), User("web-bob000000000", "Bob")
    async with (
        process(url, server_clock=True) as first,
        process(url, server_clock=True) as second,
    ):
        held = second.playground
        held.uploads.add(ann.id, "fox.png", png(), "image/png")
        held.downloads.add(ann.id, "jobs.zip", b"PK", "application/zip")
        held.uploads.add(bob.id, "hare.png", png(), "image/png")
        form = PendingModal(zoom_modal("settings", "user"), PLACE, None)
        held.remember_modal(ann.id, form)
        note = WebMessage(
            held.store.new_id(), "general", None, "ephemeral", BOT_AUTHOR, text="only Ann",
            visible_to=ann.id, created=held.clock(),
        )  # fmt: skip
        held.show_unkept(note)
        feed = await cut_and_held_down(url, second)

        await first.surface.forget_user(ann.id)
        after, _ = held.uploads.add(ann.id, "after.png", png(), "image/png")
        assert held.uploads.owned_by(ann.id) == 2
        feed.up.set()

        await eventually(lambda: held.uploads.owned_by(ann.id) == 1, ACROSS_PROCESSES)
        assert held.uploads.get(after, ann.id) is not None
        assert held.downloads.owned_by(ann.id) == 0
        assert held.uploads.owned_by(bob.id) == 1
        assert held.pending_modal(ann.id, form.modal.custom_id) is None
        assert held.form_closed(ann.id, form.modal.custom_id)
        assert held.store.get(note.id) is None
