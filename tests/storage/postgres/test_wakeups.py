"""A process that learns something about another's job wakes the owner with NOTIFY."""

from __future__ import annotations

import asyncio

from storage.postgres import PostgresStore
from tests.postgres import PostgresCluster
from tests.storage.conftest import new_job
from tests.storage.helpers import create_job


async def test_the_owner_hears_its_job_ids_and_no_one_elses(postgres: PostgresCluster) -> None:
    url = postgres.create_schema()
    async with (
        await PostgresStore.open(url) as owner,
        await PostgresStore.open(url) as receiver,
        await PostgresStore.open(url) as bystander,
    ):
        assert owner.leasing.shared
        mine = await create_job(owner.admission, new_job())
        theirs = await create_job(bystander.admission, new_job())
        heard: asyncio.Queue[str] = asyncio.Queue()
        ready = asyncio.Event()

        async def listen() -> None:
            wakeups = owner.leasing.wakeups()
            first = asyncio.ensure_future(anext(wakeups))
            ready.set()
            await heard.put(await first)
            async for job_id in wakeups:
                await heard.put(job_id)

        listener = asyncio.create_task(listen())
        await ready.wait()
        async with asyncio.timeout(10):
            while heard.empty():
                await receiver.leasing.wake_owner(theirs)
                await receiver.leasing.wake_owner(mine)
                await asyncio.sleep(0.05)
            assert await heard.get() == mine.id
        await owner.leasing.wake_owner(mine)
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        assert heard.empty() or {heard.get_nowait() for _ in range(heard.qsize())} == {mine.id}
