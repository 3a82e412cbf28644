"""Hosted media in the database: kept, served by any process (each serving counted), expired,
capped per owner and in total."""

from __future__ import annotations

from storage import MediaCaps, Store
from tests.storage.conftest import ManualClock

ROOMY = MediaCaps(total=10_000, per_owner=10_000)


async def test_an_image_kept_by_one_process_is_served_by_another(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    await store.media.put("a.png", "web:alice", "image/png", b"\x89PNG one", 600, ROOMY)
    assert await other_store.media.fetches(("a.png", "b.png")) == {"a.png": 0}
    assert await other_store.media.serve("a.png") == ("image/png", b"\x89PNG one")
    assert await store.media.serve("a.png") == ("image/png", b"\x89PNG one")
    assert await store.media.fetches(("a.png",)) == {"a.png": 2}
    assert await store.media.serve("b.png") is None
    clock.advance(600)
    assert await other_store.media.serve("a.png") is None


async def test_the_owners_oldest_go_first_then_everyones(store: Store, clock: ManualClock) -> None:
    caps = MediaCaps(total=50, per_owner=30)
    for n in range(2):
        await store.media.put(f"alice{n}", "alice", "image/png", b"x" * 10, 600, caps)
        clock.advance(1)
    for n in range(5):
        await store.media.put(f"mallory{n}", "mallory", "image/png", b"x" * 10, 600, caps)
        clock.advance(1)
    kept = await store.media.fetches(("alice0", "alice1", *(f"mallory{n}" for n in range(5))))
    assert sorted(kept) == ["alice0", "alice1", "mallory2", "mallory3", "mallory4"]
    await store.media.put("anyone", None, "image/png", b"x" * 10, 600, caps)
    kept = await store.media.fetches(("alice0", "alice1", "anyone"))
    assert sorted(kept) == ["alice1", "anyone"], "past the total, everyone's oldest goes"
    clock.advance(600)
    await store.media.put("later", None, "image/png", b"x", 600, caps)
    assert await store.media.fetches(("alice1", "anyone", "later")) == {"later": 0}
