"""The audit log on both backends: entries kept with their states, filtered and paged per
workspace, and purged past ``keep_days`` by one process per hour."""

from __future__ import annotations

import asyncio

from storage import AuditEntry, Store
from tests.storage.conftest import ManualClock

DAY = 86400.0


def entry(kind: str, actor: str = "U2", target: str = "U1", **fields: object) -> AuditEntry:
    values: dict[str, object] = {
        "platform": "slack",
        "workspace_id": "T1",
        "channel_id": "C1",
        "actor_id": actor,
        "target": target,
        **fields,
    }
    return AuditEntry(kind, **values)  # type: ignore[arg-type]


async def test_entries_are_kept_with_their_states_and_read_newest_first(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    added = await store.audit.record(
        entry("settings.changed", target="workspace", before={"n": None}, after={"n": 2})
    )
    assert (added.at, added.id > 0) == (clock.now, True)
    clock.advance(60)
    await other_store.audit.record(entry("moderation.banned", actor="genbot", after={"min": 60}))
    await store.audit.record(entry("moderation.refused", platform="discord"))
    await store.audit.record(entry("moderation.refused", workspace_id="T2"))

    listed = await other_store.audit.entries("slack", "T1")
    assert [e.kind for e in listed] == ["moderation.banned", "settings.changed"]
    assert listed[1] == added
    assert listed[0].before is None and listed[0].after == {"min": 60}


async def test_filters_by_user_kind_family_and_days_and_pages(
    store: Store, clock: ManualClock
) -> None:
    await store.audit.record(entry("moderation.rule_added", actor="U2", target="nude"))
    clock.advance(3 * DAY)
    await store.audit.record(entry("moderation.refused", actor="U1", target="U1"))
    await store.audit.record(entry("moderation.banned", actor="genbot", target="U1"))
    await store.audit.record(entry("settings.changed", actor="U2", target="channel C1"))

    async def kinds(**filters: object) -> list[str]:
        found = await store.audit.entries("slack", "T1", **filters)  # type: ignore[arg-type]
        return [e.kind for e in found]

    assert await kinds(user="U1") == ["moderation.banned", "moderation.refused"]
    assert await kinds(kind="moderation") == [
        "moderation.banned",
        "moderation.refused",
        "moderation.rule_added",
    ]
    assert await kinds(kind="moderation.banned") == ["moderation.banned"]
    assert await kinds(kind="moderation.ban") == [], "a family is a whole word"
    assert await kinds(days=1) == ["settings.changed", "moderation.banned", "moderation.refused"]
    assert await kinds(user="U2", days=7) == ["settings.changed", "moderation.rule_added"]
    assert await kinds(limit=2, offset=2) == ["moderation.refused", "moderation.rule_added"]


async def test_one_process_purges_per_hour_what_is_older_than_keep_days(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    await store.audit.record(entry("moderation.refused"))
    clock.advance(10 * DAY)
    await store.audit.record(entry("moderation.banned"))
    purged = await asyncio.gather(store.audit.purge(7), other_store.audit.purge(7))
    assert sorted(purged, key=str) == [1, None], "one process purges, the other does not"
    assert [e.kind for e in await store.audit.entries("slack", "T1")] == ["moderation.banned"]

    clock.advance(8 * DAY)
    assert await other_store.audit.purge(30) == 0, "the next hour, anyone may"
    assert await store.audit.purge(7) is None
    clock.advance(3601)
    assert await store.audit.purge(7) == 1
