"""Job moves asked for in one turn of the event loop go to storage as one batch."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.features.jobs.tracking.moves import MoveBatch
from storage import SqliteStore, StorageError
from tests.storage.conftest import new_job
from tests.storage.counting import counted
from tests.storage.helpers import create_job


async def test_moves_of_one_turn_go_together_and_each_caller_gets_its_answer(
    tmp_path: Path,
) -> None:
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        jobs = [await create_job(store.admission, new_job(requester_id=f"u{n}")) for n in range(5)]
        counting = counted(store)
        moves = MoveBatch(store.jobs)

        moved = await asyncio.gather(
            *(moves.transition(job.id, "creating", "pending") for job in jobs),
            moves.transition(jobs[0].id, "creating", "pending"),
        )

        assert moved == [True] * 5 + [False], "the repeated move found the job moved"
        assert (moves.batches, len(counting.trips)) == (1, 1)
        assert await moves.transition(jobs[1].id, "pending", "processing")
        assert moves.batches == 2


async def test_a_failed_batch_fails_every_move_in_it(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "genbot.db")
    job = await create_job(store.admission, new_job())
    await store.close()
    moves = MoveBatch(store.jobs)

    results = await asyncio.gather(
        moves.transition(job.id, "creating", "pending"),
        moves.transition(job.id, "creating", "failed"),
        return_exceptions=True,
    )

    assert all(isinstance(result, StorageError) for result in results), results
    with pytest.raises(StorageError):
        await moves.transition(job.id, "creating", "pending")


async def test_a_batch_cancelled_before_it_is_sent_leaves_the_next_moves_their_own_turn(
    tmp_path: Path,
) -> None:
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        job = await create_job(store.admission, new_job())
        moves = MoveBatch(store.jobs)
        first = asyncio.ensure_future(moves.transition(job.id, "creating", "pending"))
        await asyncio.sleep(0)
        [sending] = [t for t in asyncio.all_tasks() if t.get_name() == "genbot-job-moves"]
        sending.cancel()
        first.cancel()

        assert await asyncio.wait_for(moves.transition(job.id, "creating", "pending"), 5)
        assert moves.batches == 1, "the cancelled batch never went to storage"
