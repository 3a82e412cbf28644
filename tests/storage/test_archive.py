"""The archive on both backends: posted jobs found by the words of their prompts through the
full-text index, by requester or workspace, type, channel and time, a page at a time; and jobs
made before the index existed are found too (the migration indexes them)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from storage import Job, JobSearch, Store, migrate
from storage.queries import archive
from tests.storage.conftest import Database, ManualClock, new_job
from tests.storage.helpers import create_job


async def posted(store: Store, clock: ManualClock, **fields: Any) -> Job:
    job = await create_job(store.admission, new_job(**fields))
    await store.jobs.transition(job.id, "creating", "finished")
    await store.jobs.transition(job.id, "finished", "posting")
    await store.jobs.transition(job.id, "posting", "posted")
    clock.advance(60)
    return job


def search(**fields: Any) -> JobSearch:
    mine = {"platform": "discord", "requester_id": "u1", "workspace_id": "g1"}
    return JobSearch(**(mine | fields))


async def test_words_of_a_prompt_find_its_jobs_within_the_requester_and_workspace(
    store: Store, clock: ManualClock
) -> None:
    fox = await posted(store, clock, prompt="A red Fox in the snow --ar 16:9")
    owl = await posted(store, clock, prompt="an owl at dusk, foxglove")
    both = await posted(store, clock, prompt="fox and owl, friends")
    await posted(store, clock, prompt="a fox", requester_id="u2")
    await posted(store, clock, prompt="a fox", workspace_id="g2")
    await posted(store, clock, prompt="a fox", platform="slack")
    unfinished = await create_job(store.admission, new_job(prompt="a fox"))

    found = await store.archive.search(search(words=("fox",)), 10)
    assert [job.id for job in found] == [both.id, fox.id], "whole words, any case, newest first"
    assert unfinished.id not in [job.id for job in found]
    assert [j.id for j in await store.archive.search(search(words=("owl", "fox")), 10)] == [both.id]
    assert [j.id for j in await store.archive.search(search(words=("snow",)), 10)] == [fox.id]
    assert await store.archive.search(search(words=("wolf",)), 10) == []
    everything = await store.archive.search(search(), 10)
    assert [job.id for job in everything] == [both.id, owl.id, fox.id]


async def test_filters_pages_and_the_workspace_search_of_admins(
    store: Store, clock: ManualClock
) -> None:
    first = await posted(store, clock, prompt="a fox")
    upscale = await posted(store, clock, prompt="a fox", type="upscale", channel_id="c2")
    diffusion = await posted(store, clock, prompt="a fox", family="diffusion", type="txt2img")
    other = await posted(store, clock, prompt="a fox", requester_id="u2")
    private = await posted(store, clock, prompt="a fox", requester_id="u3", is_dm=True)
    anywhere = await posted(store, clock, prompt="a fox", workspace_id="g2")

    async def ids(limit: int = 10, **fields: Any) -> list[str]:
        return [job.id for job in await store.archive.search(search(**fields), limit)]

    assert await ids(types=("upscale",)) == [upscale.id]
    assert await ids(family="diffusion") == [diffusion.id]
    assert await ids(channel_id="c2") == [upscale.id]
    assert await ids(since=upscale.created_at, until=diffusion.created_at) == [upscale.id]
    page = await ids(limit=2)
    assert page == [diffusion.id, upscale.id]
    assert await ids(limit=2, after=page[-1]) == [first.id]
    assert await ids(requester_id=None, words=("fox",)) == [
        other.id,
        diffusion.id,
        upscale.id,
        first.id,
    ], "everyone's jobs in the workspace, not their DMs"
    assert private.id not in await ids(requester_id=None, workspace_id=None)
    assert await ids(workspace_id=None) == [anywhere.id, diffusion.id, upscale.id, first.id]


async def test_jobs_made_before_the_index_are_indexed_by_its_migration(
    database: Database, clock: ManualClock
) -> None:
    db = await database.connect()
    try:
        assert await migrate(db, target=18) == 18
        await db.execute(
            "INSERT INTO jobs (id, family, type, status, requester_id, platform, workspace_id,"
            " channel_id, prompt, created_at, updated_at)"
            " VALUES ('old', 'task', 'imagine', 'posted', 'u1', 'discord', 'g1', 'c1',"
            " 'a lighthouse at dusk', 1, 1)"
        )
    finally:
        await db.close()
    store = await database.open(clock)
    try:
        found = await store.archive.search(search(words=("lighthouse",)), 10)
        await store.jobs.update_job("old", prompt="a windmill")
        renamed = await store.archive.search(search(words=("windmill",)), 10)
        gone = await store.archive.search(search(words=("lighthouse",)), 10)
    finally:
        await store.close()
    assert [job.id for job in found] == ["old"]
    assert [job.id for job in renamed] == ["old"]
    assert gone == []


async def test_common_words_walk_the_jobs_and_find_the_same(
    store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = [await posted(store, clock, prompt=f"a fox number {n}") for n in range(4)]
    await posted(store, clock, prompt="a fox", requester_id="u2")
    rare = await store.archive.search(search(words=("fox",)), 3)
    monkeypatch.setattr(archive, "RARE_WORDS", 2)
    common = await store.archive.search(search(words=("fox",)), 3)
    after = await store.archive.search(search(words=("fox",), after=common[-1].id), 3)
    assert [job.id for job in common] == [job.id for job in rare] == [j.id for j in made[:0:-1]]
    assert [job.id for job in after] == [made[0].id]


async def test_a_workspace_search_finds_the_same_by_every_plan(
    store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = [await posted(store, clock, prompt=f"a fox {n}", requester_id=f"u{n}") for n in range(4)]
    await posted(store, clock, prompt="an owl")
    await posted(store, clock, prompt="a fox in a DM", is_dm=True)
    everyones = search(requester_id=None, words=("fox",))
    pages = []
    for few, many in ((10, 10), (2, 10), (1, 2)):
        monkeypatch.setattr(archive, "FEW_WORDS", few)
        monkeypatch.setattr(archive, "MANY_WORDS", many)
        first = await store.archive.search(everyones, 3)
        after = await store.archive.search(replace(everyones, after=first[-1].id), 3)
        pages.append(([job.id for job in first], [job.id for job in after]))
    newest = [job.id for job in made[::-1]]
    assert pages == [(newest[:3], newest[3:])] * 3, "read first, against the matches, walked"
