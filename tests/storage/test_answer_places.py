"""The places of each user's chat answers, shared by the processes of one database
(storage/queries/answer_places.py): taken while fewer than the most are, freed at the end,
renewed, and freed by themselves when their lease runs out."""

from __future__ import annotations

import asyncio

from storage import AnswerPlace, Store
from storage.queries.answer_places import LEASE_SECONDS
from tests.storage.conftest import ManualClock


async def test_two_processes_share_a_users_places(store: Store, other_store: Store) -> None:
    first = await store.answer_places.answer_starts("web", "alice", 2)
    second = await other_store.answer_places.answer_starts("web", "alice", 2)
    assert first.slot is not None and second.slot is not None
    assert (first.running, second.running) == (0, 1)
    assert await other_store.answer_places.answer_starts("web", "alice", 2) == AnswerPlace(None, 2)
    assert (await store.answer_places.answer_starts("web", "bob", 2)).slot is not None
    assert (await store.answer_places.answer_starts("slack", "alice", 2)).slot is not None

    await other_store.answer_places.answer_ended("web", "alice", second.slot)
    await other_store.answer_places.answer_ended("web", "alice", second.slot)
    third = await store.answer_places.answer_starts("web", "alice", 2)
    assert third.slot is not None and third.running == 1


async def test_a_place_not_renewed_frees_itself_and_a_renewed_one_holds(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    kept = await store.answer_places.answer_starts("web", "alice", 2)
    await store.answer_places.answer_starts("web", "alice", 2)
    assert kept.slot is not None
    clock.advance(LEASE_SECONDS * 0.75)
    await store.answer_places.answer_goes_on("web", "alice", kept.slot)
    clock.advance(LEASE_SECONDS * 0.75)
    place = await other_store.answer_places.answer_starts("web", "alice", 2)
    assert place.slot is not None and place.running == 1


async def test_two_processes_asking_together_for_the_last_place_get_it_once(
    store: Store, other_store: Store
) -> None:
    asked = [
        places.answer_starts("web", "alice", 1)
        for places in (store.answer_places, other_store.answer_places) * 4
    ]
    answers = await asyncio.gather(*asked)
    assert sorted(answer.slot is None for answer in answers) == [False] + [True] * 7
