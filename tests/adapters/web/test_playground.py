"""What the playground holds in memory of users' DMs: at most ``DMS_IN_MEMORY`` besides those a
browser watches; one let go is read from the history again when its user opens it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession
from yarl import URL

from adapters.web import WebAdapter, playground
from adapters.web.platform import dm_channel
from adapters.web.settings import WebSettings
from storage import PlaygroundHistory, PlaygroundImage, PlaygroundMessage, SqliteStore
from tests.adapters.web.fakes import (
    STREAMED_ANSWER,
    RecordingCore,
    SseReader,
    eventually,
    history,
    post,
)
from tests.adapters.web.test_journal import browser_of, serving
from tests.adapters.web.test_journal import playground as playground_in


async def in_dm(adapter: WebAdapter, browser: ClientSession, text: str) -> str:
    """Post ``text`` in the browser's user's DM and wait for genbot's answer there; the DM's
    channel."""
    dm = str((await history(browser))["dm"])
    status, answer = await post(browser, "/api/message", {"text": text, "channel": dm})
    assert status == 202, answer
    await eventually(lambda: adapter.running_handlers == 0)
    return dm


def texts(page: dict[str, Any]) -> list[str]:
    return [message["text"] for message in page["messages"]]


async def test_the_quietest_dm_goes_from_memory_and_is_read_again_when_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(playground, "DMS_IN_MEMORY", 2)
    async with playground_in(tmp_path / "genbot.db", RecordingCore()) as adapter:
        store = adapter.playground.store
        async with (
            browser_of(adapter) as ann,
            browser_of(adapter) as bob,
            browser_of(adapter) as cy,
        ):
            ann_dm = await in_dm(adapter, ann, "hi from ann")
            bob_dm = await in_dm(adapter, bob, "hi from bob")
            cy_dm = await in_dm(adapter, cy, "hi from cy")
            assert store.dms() == [bob_dm, cy_dm]

            assert texts(await history(ann, ann_dm)) == ["hi from ann", STREAMED_ANSWER]
            assert store.dms() == [cy_dm, ann_dm]
            assert texts(await history(bob, bob_dm)) == ["hi from bob", STREAMED_ANSWER]


async def test_a_dm_a_browser_watches_stays_and_a_dm_let_go_is_numbered_anew(
    browsers: Callable[[], ClientSession],
    adapter: WebAdapter,
    stream: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without a history a DM let go is gone; a page that followed it before is told to reload,
    never replayed events of the new DM numbered like those it saw."""
    monkeypatch.setattr(playground, "DMS_IN_MEMORY", 1)
    store = adapter.playground.store
    ann, bob, cy = browsers(), browsers(), browsers()
    ann_dm = str((await history(ann))["dm"])
    watching: SseReader = await stream(ann, ann_dm)
    await in_dm(adapter, ann, "mine")
    bob_dm = await in_dm(adapter, bob, "his")
    seen = (await history(bob, bob_dm))["seq"]
    assert seen > 0
    assert store.dms() == [ann_dm, bob_dm]

    cy_dm = await in_dm(adapter, cy, "hers")
    assert store.dms() == [ann_dm, cy_dm]
    assert texts(await history(ann, ann_dm)) == ["mine", STREAMED_ANSWER]
    assert (await history(bob, bob_dm))["messages"] == []
    assert (await watching.next()).data["message"]["text"] == "mine"

    await in_dm(adapter, bob, "again")
    followed: SseReader = await stream(bob, bob_dm, after=seen)
    assert (await followed.next()).data == {"type": "reset", "channel": bob_dm}


class SeenLoads(PlaygroundHistory):
    """The playground's SQLite history, recording the channels each full load read."""

    loaded: list[set[str]]

    async def load_playground(
        self,
        keep: int,
        *,
        max_image_bytes: int | None = None,
        dm_prefix: str = "",
        most_dms: int | None = None,
    ) -> tuple[list[PlaygroundMessage], list[PlaygroundImage]]:
        found = await super().load_playground(
            keep, max_image_bytes=max_image_bytes, dm_prefix=dm_prefix, most_dms=most_dms
        )
        self.loaded.append({message.channel for message in found[0]})
        return found


async def test_a_start_reads_no_more_dms_than_it_holds_the_latest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The history's DMs past :data:`DMS_IN_MEMORY` are not read at all at start (those a
    message came to last are); one left out is read when its user opens it."""
    async with (
        playground_in(tmp_path / "genbot.db", RecordingCore()) as adapter,
        browser_of(adapter) as ann,
        browser_of(adapter) as bob,
        browser_of(adapter) as cy,
    ):
        ann_dm = await in_dm(adapter, ann, "hi from ann")
        bob_dm = await in_dm(adapter, bob, "hi from bob")
        cy_dm = await in_dm(adapter, cy, "hi from cy")
        await in_dm(adapter, ann, "ann again")
        assert (await post(ann, "/api/message", {"text": "hi", "channel": "lab"}))[0] == 202
        await eventually(lambda: adapter.running_handlers == 0)
        cookies = {cookie.key: cookie.value for cookie in ann.cookie_jar}
    monkeypatch.setattr(playground, "DMS_IN_MEMORY", 2)
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        stored = store.playground
        seen = SeenLoads(stored.db, stored.clock, stored.owner)
        seen.loaded = []
        async with serving(seen, RecordingCore()) as adapter:
            assert seen.loaded == [{"lab", ann_dm, cy_dm}]
            assert adapter.playground.store.dms() == [cy_dm, ann_dm]
            async with browser_of(adapter) as again:
                again.cookie_jar.update_cookies(cookies, URL(adapter.url))
                assert texts(await history(again, ann_dm))[0] == "hi from ann"
            assert bob_dm not in adapter.playground.store.dms()


async def test_a_channel_left_quiet_goes_from_memory_and_history_its_dms_and_defaults_stay(
    tmp_path: Path,
) -> None:
    now = [1_000_000.0]
    idle = WebSettings().channel_idle_days * 86400
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        async with (
            serving(store.playground, RecordingCore(), clock=lambda: now[0]) as adapter,
            browser_of(adapter) as ann,
        ):
            for channel in ("quiet", "busy", "general"):
                status, _ = await post(ann, "/api/message", {"text": "hi", "channel": channel})
                assert status == 202
            dm = await in_dm(adapter, ann, "mine")
            assert await adapter.drop_quiet_channels() == []
            now[0] += idle + 1
            await post(ann, "/api/message", {"text": "still here", "channel": "busy"})
            await eventually(lambda: adapter.running_handlers == 0)

            assert await adapter.drop_quiet_channels() == ["quiet"]

            channels = (await history(ann))["channels"]
            assert "quiet" not in channels and "busy" in channels
            assert texts(await history(ann, "quiet")) == []
            assert texts(await history(ann))[0] == "hi"
            assert texts(await history(ann, dm))[0] == "mine"
            assert "still here" in texts(await history(ann, "busy"))
        async with (
            serving(store.playground, RecordingCore(), clock=lambda: now[0]) as adapter,
            browser_of(adapter) as someone,
        ):
            channels = (await history(someone))["channels"]
            assert "quiet" not in channels and "busy" in channels


async def test_genbots_answer_to_a_user_goes_with_them_in_memory_as_in_the_history(
    tmp_path: Path,
) -> None:
    """An admin's ``/forget-me <user>``: a channel where only they and genbot's answer to them
    wrote goes at once, not only after a restart."""
    async with playground_in(tmp_path / "genbot.db", RecordingCore()) as adapter:
        pg = adapter.playground
        async with browser_of(adapter) as ann:
            me = (await history(ann))["me"]["id"]
            status, _ = await post(ann, "/api/message", {"text": "hi", "channel": "spam"})
            assert status == 202
            await eventually(lambda: adapter.running_handlers == 0)
            assert pg.journal is not None
            stored, _ = await pg.journal.about_user(me, dm_channel(me))
            held = {m.id for m in pg.store.about(me, dm_channel(me))}
            assert held == set(stored) and len(held) == 2

            assert (await pg.forget_user(me))["playground_messages"] == 2

            assert "spam" not in pg.channels()
            assert "spam" not in (await history(ann))["channels"]
