"""The playground on PostgreSQL with several genbot processes: a message one process shows
(with its images, edits and deletions) reaches the browsers of every other process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import psycopg
import pytest
from prometheus_client import REGISTRY

from adapters.web import WebAdapter, playground
from adapters.web.messages import BOT_AUTHOR, WebMessage
from adapters.web.settings import WebSettings
from bot.kernel import ImageFile, MessageRef, OutMessage, Place
from storage.postgres import PostgresStore
from storage.queries.playground import CHANNEL, PlaygroundHistory
from tests.adapters.web.fakes import RecordingCore, eventually, png
from tests.fakes.router import FakeRouter
from tests.postgres import PostgresCluster
from tests.storage.counting import CountingDatabase

PLACE = Place("web", "web", "general", None)
ACROSS_PROCESSES = 30.0
"""Seconds a change may take to reach the other process (the journal is read on a notification
or a timer; a loaded machine can delay either)."""


@asynccontextmanager
async def process(url: str) -> AsyncIterator[WebAdapter]:
    """One genbot process's playground on the shared database."""
    async with await PostgresStore.open(url, pool_size=2) as store:
        core = RecordingCore()
        adapter = WebAdapter(WebSettings(host="127.0.0.1", port=0), history=store.playground)
        core.surface = adapter.surface
        await adapter.start(FakeRouter(core, [adapter.surface]))
        try:
            yield adapter
        finally:
            await adapter.stop()


async def test_a_browser_on_any_process_sees_every_message(postgres: PostgresCluster) -> None:
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second:
        watching, _ = second.playground.hub.subscribe("general", "anyone", None)
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
        batch = await watching.next_batch(timeout=ACROSS_PROCESSES)
        assert [(payload["type"], payload["message"]["text"]) for _, payload in batch] == [
            ("post", "a fox")
        ]

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
    async with process(url) as first, process(url) as second:
        store = second.playground.store
        made_first = WebMessage(store.new_id(), "general", None, "bot", BOT_AUTHOR, "made first")
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
    """Every process reads what the others save: the notices that came while it was showing
    earlier ones are read in one statement, not one each."""
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second:
        history = second.playground.history
        assert isinstance(history, PlaygroundHistory)
        counting = CountingDatabase(history.db)
        history.db = counting
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


async def test_a_process_edits_a_message_it_missed_while_following_was_cut(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(playground, "FOLLOW_RETRY_SECONDS", 30.0)
    url = postgres.create_schema()
    async with process(url) as first, process(url) as second:
        before = feed_failures()
        cut_following(url)
        await eventually(lambda: feed_failures() == before + 2, ACROSS_PROCESSES)
        ref = await first.surface.send(PLACE, OutMessage("⏳ drawing", key="job9.progress"))
        assert second.playground.store.get(ref.message_id) is None

        await second.surface.edit(ref, OutMessage("the result"))

        assert [m.text for m in second.playground.store.history("general", "anyone")] == [
            "the result"
        ]
        await eventually(
            lambda: (
                [m.text for m in first.playground.store.history("general", "x")] == ["the result"]
            ),
            ACROSS_PROCESSES,
        )
