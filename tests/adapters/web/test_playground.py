"""What the playground holds in memory of users' DMs: at most ``DMS_IN_MEMORY`` besides those a
browser watches; one let go is read from the history again when its user opens it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession

from adapters.web import WebAdapter, playground
from tests.adapters.web.fakes import (
    STREAMED_ANSWER,
    RecordingCore,
    SseReader,
    eventually,
    history,
    post,
)
from tests.adapters.web.test_journal import browser_of
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
