"""The platform-message → job map."""

from __future__ import annotations

import pytest

from storage import StorageError, Store
from tests.storage.conftest import new_job
from tests.storage.helpers import create_job, messages_for_job


async def test_link_and_look_up_messages_of_a_job(store: Store) -> None:
    job = await create_job(store.admission, new_job())
    await store.message_links.link_message("discord", "c1", "m-progress", job.id, "progress")
    await store.message_links.link_message("discord", "c1", "m-result-1", job.id)
    await store.message_links.link_message("discord", "c1", "m-result-2", job.id)
    found = await store.message_links.job_for_message("discord", "c1", "m-result-2")
    assert found == job
    assert await store.message_links.job_for_message("discord", "c1", "m-progress") == job
    assert [(m.message_id, m.kind) for m in await messages_for_job(store, job.id)] == [
        ("m-progress", "progress"),
        ("m-result-1", "result"),
        ("m-result-2", "result"),
    ]


async def test_the_key_is_platform_channel_and_message(store: Store) -> None:
    job = await create_job(store.admission, new_job())
    await store.message_links.link_message("slack", "C1", "1700000000.000100", job.id)
    assert await store.message_links.job_for_message("slack", "C2", "1700000000.000100") is None
    assert await store.message_links.job_for_message("discord", "C1", "1700000000.000100") is None


async def test_relinking_a_message_moves_it(store: Store) -> None:
    first = await create_job(store.admission, new_job())
    second = await create_job(store.admission, new_job())
    await store.message_links.link_message("discord", "c1", "m1", first.id, "progress")
    await store.message_links.link_message("discord", "c1", "m1", second.id, "result")
    assert await store.message_links.job_for_message("discord", "c1", "m1") == second
    assert await messages_for_job(store, first.id) == []


async def test_links_need_a_known_job_and_kind(store: Store) -> None:
    with pytest.raises(StorageError):
        await store.message_links.link_message("discord", "c1", "m1", "ghost")
    job = await create_job(store.admission, new_job())
    with pytest.raises(StorageError, match="kind"):
        await store.message_links.link_message("discord", "c1", "m1", job.id, "banner")  # type: ignore[arg-type]
