"""The purge service: ``[storage.keep_days]`` per kind (a plain number is the audit log's, as
before), each kind's cutoff from the clock (0 keeps it), the service purging on start (the audit
log too), and hosted uploads swept past their days."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.features.audit import AuditTrail
from bot.features.retention import RetentionPurge
from bot.kernel import KeepDays, MediaHost, Place, StorageSettings, inspect_image
from storage import ConversationKey, Cutoffs, SqliteStore
from tests.adapters.web.fakes import png
from tests.storage.conftest import ManualClock

DAY = 86400.0


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def store(tmp_path: Path, clock: ManualClock) -> AsyncIterator[SqliteStore]:
    opened = await SqliteStore.open(tmp_path / "genbot.db", clock=clock)
    try:
        yield opened
    finally:
        await opened.close()


def test_keep_days_is_a_table_of_kinds_or_the_audit_logs_days_as_before() -> None:
    assert StorageSettings.model_validate({"keep_days": 30}).keep_days == KeepDays(audit=30)
    table = {"keep_days": {"conversations": 7, "job_results": 365, "images": 30}}
    assert StorageSettings.model_validate(table).keep_days == KeepDays(
        audit=90, conversations=7, job_results=365, images=30
    )
    assert StorageSettings().keep_days == KeepDays(), "nothing but the audit log is purged"


async def test_the_service_purges_each_kind_past_its_days_and_keeps_what_has_none(
    store: SqliteStore, clock: ManualClock
) -> None:
    trail = AuditTrail(store.audit, 7)
    await trail.record("moderation.refused", Place("slack", "T1", "C1"), "U1", "U1")
    keep = KeepDays(audit=7, conversations=7, images=1)
    purge = RetentionPurge(store.retention, keep, clock, audit=trail)
    assert purge.cutoffs() == Cutoffs(clock() - 7 * DAY, None, clock() - DAY)
    for name in ("old", "new"):
        key = ConversationKey("slack", "T1", "C1", name)
        await store.conversations.get_or_create_conversation(key, kind="thread")
        clock.advance(5 * DAY)
    await purge.start()
    try:
        for _ in range(500):
            if len(await store.db.fetch_all("SELECT id FROM conversations")) == 1:
                break
            await asyncio.sleep(0.01)
    finally:
        await purge.stop()
    [kept] = await store.db.fetch_all("SELECT thread_key FROM conversations")
    assert kept == {"thread_key": "new"}
    assert await store.audit.entries("slack", "T1") == [], "and the audit log's"


async def test_hosted_uploads_go_past_their_days_or_once_they_are_no_longer_served(
    store: SqliteStore, clock: ManualClock
) -> None:
    host = MediaHost("https://genbot.example.org", store.media, ttl=3 * DAY)
    old = await host.put(inspect_image(png(4, 4)))
    clock.advance(2 * DAY)
    new = await host.put(inspect_image(png(4, 4)))
    assert await host.sweep(DAY) == 1
    assert await host.unread((old, new)) == 2 and await host.get(old.rsplit("/", 1)[1]) is None
    assert await host.get(new.rsplit("/", 1)[1]) is not None
    clock.advance(3 * DAY)
    assert await host.sweep(30 * DAY) == 1, "past the time it is served, whatever the days"
