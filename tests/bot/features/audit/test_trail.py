"""The trail: an entry is kept in the store and logged as one JSON line with ``event=audit``;
an unknown kind is refused; a purge removes what is older than ``keep_days``."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.features.audit import AuditTrail
from bot.kernel import Place
from genbot.jsonlog import JsonFormatter
from storage import SqliteStore
from tests.storage.conftest import ManualClock

PLACE = Place("slack", "T1", "C1")


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


async def test_an_entry_is_stored_and_logged_as_json_with_event_audit(
    store: SqliteStore, caplog: pytest.LogCaptureFixture
) -> None:
    trail = AuditTrail(store.audit, 90)
    with caplog.at_level(logging.INFO, logger="genbot.audit"):
        kept = await trail.record(
            "moderation.banned", PLACE, "U2", "U1", before=None, after={"minutes": 30}
        )
    [stored] = await store.audit.entries("slack", "T1")
    assert stored == kept and stored.after == {"minutes": 30}
    [record] = caplog.records
    line = json.loads(JsonFormatter(["sekrit"]).format(record))
    assert line["event"] == "audit" and line["kind"] == "moderation.banned"
    assert (line["actor_id"], line["target"], line["workspace_id"]) == ("U2", "U1", "T1")
    assert json.loads(line["after"]) == {"minutes": 30} and line["before"] == "null"
    assert line["audit_id"] == str(kept.id)


async def test_the_json_line_is_redacted_like_any(
    store: SqliteStore, caplog: pytest.LogCaptureFixture
) -> None:
    trail = AuditTrail(store.audit, 90)
    with caplog.at_level(logging.INFO, logger="genbot.audit"):
        await trail.record("settings.changed", PLACE, "U2", "channel C1", after={"x": "sekrit"})
    line = JsonFormatter(["sekrit"]).format(caplog.records[0])
    assert "sekrit" not in line


async def test_an_unknown_kind_is_refused(store: SqliteStore) -> None:
    with pytest.raises(ValueError, match="not a kind"):
        await AuditTrail(store.audit, 90).record("settings.deleted", PLACE, "U2", "")
    assert await store.audit.entries("slack", "T1") == []


async def test_a_purge_removes_what_is_older_than_keep_days(
    store: SqliteStore, clock: ManualClock
) -> None:
    trail = AuditTrail(store.audit, 2)
    await trail.record("moderation.refused", PLACE, "U1", "U1")
    clock.advance(3 * 86400.0)
    await trail.record("moderation.refused", PLACE, "U1", "U1")
    assert await trail.purge() == 1
    assert len(await store.audit.entries("slack", "T1")) == 1


async def test_the_log_line_leaves_out_what_the_user_wrote_and_the_store_keeps_it(
    store: SqliteStore, caplog: pytest.LogCaptureFixture
) -> None:
    refused = {"category": "nsfw", "text": "a nude fox", "offence": 1}
    with caplog.at_level(logging.INFO, logger="genbot.audit"):
        await AuditTrail(store.audit, 90).record(
            "moderation.refused", PLACE, "U1", "U1", after=refused
        )
    line = json.loads(JsonFormatter([]).format(caplog.records[0]))
    assert json.loads(line["after"]) == {"category": "nsfw", "offence": 1}
    assert "nude" not in json.dumps(line)
    [kept] = await store.audit.entries("slack", "T1")
    assert kept.after == refused
