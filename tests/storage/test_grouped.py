"""Group commit: calls made while a batch runs go together in the next one; a gathering batch
after a pause waits a moment for more."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from storage.queries.grouped import Grouped
from tests.storage.helpers import LONG_GATHER, after_turns


async def test_calls_made_while_a_batch_runs_go_together_in_the_next() -> None:
    batches: list[list[int]] = []
    release = asyncio.Event()

    async def run(requests: Sequence[int]) -> list[int]:
        batches.append(list(requests))
        await release.wait()
        return [n * 10 for n in requests]

    grouped = Grouped(run)
    first = asyncio.ensure_future(grouped(1))
    await asyncio.sleep(0)
    rest = [asyncio.ensure_future(grouped(n)) for n in (2, 3, 4)]
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(first, *rest) == [10, 20, 30, 40]
    assert batches == [[1], [2, 3, 4]]


async def test_a_batch_after_a_pause_waits_for_the_calls_made_a_moment_later() -> None:
    """Three calls a few loop turns apart, from tasks that woke one after another, go in one
    batch (one transaction) rather than one each; a call after the batch starts a new one."""
    batches: list[list[int]] = []

    async def run(requests: Sequence[int]) -> list[int]:
        batches.append(list(requests))
        return [n * 10 for n in requests]

    grouped = Grouped(run, gather=LONG_GATHER)

    async def call_after(turns: int, n: int) -> int:
        await after_turns(turns)
        return await grouped(n)

    spread = [call_after(2 * n, n) for n in (1, 2, 3)]
    assert await asyncio.gather(*spread) == [10, 20, 30]
    assert batches == [[1, 2, 3]]
    assert await grouped(4) == 40
    assert batches[-1] == [4]


async def test_a_failed_batch_fails_each_of_its_calls_and_not_the_next() -> None:
    async def run(requests: Sequence[int]) -> list[int]:
        if 0 in requests:
            raise ValueError("no zero")
        return list(requests)

    grouped = Grouped(run)
    answers = await asyncio.gather(grouped(0), grouped(1), return_exceptions=True)
    assert [type(a) for a in answers] == [ValueError, ValueError]
    assert await grouped(2) == 2
    with pytest.raises(ValueError):
        await grouped(0)


async def test_an_answer_whose_caller_was_cancelled_while_its_batch_ran_is_unclaimed() -> None:
    batches: list[list[int]] = []
    release = asyncio.Event()
    unclaimed: list[int] = []

    async def run(requests: Sequence[int]) -> list[int]:
        batches.append(list(requests))
        await release.wait()
        return [n * 10 for n in requests]

    grouped = Grouped(run, unclaimed=unclaimed.append)
    running = [asyncio.ensure_future(grouped(n)) for n in (1, 2)]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    waiting = asyncio.ensure_future(grouped(3))
    await asyncio.sleep(0)
    running[0].cancel()
    waiting.cancel()
    release.set()
    assert await running[1] == 20
    await asyncio.sleep(0)
    assert batches == [[1, 2]]
    assert unclaimed == [10], "served with its caller gone; one cancelled before its batch is not"


async def test_an_answer_whose_caller_was_cancelled_before_it_resumed_is_unclaimed() -> None:
    """A caller cancelled once its answer was set, before it took it (another caller of the
    batch, resumed first, cancels it), hands the answer to ``unclaimed``."""
    unclaimed: list[int] = []

    async def run(requests: Sequence[int]) -> list[int]:
        await asyncio.sleep(0)
        return [n * 10 for n in requests]

    grouped = Grouped(run, unclaimed=unclaimed.append)
    second: asyncio.Future[int] | None = None

    async def first_cancels_second() -> int:
        answer = await grouped(1)
        assert second is not None
        second.cancel()
        return answer

    first = asyncio.ensure_future(first_cancels_second())
    second = asyncio.ensure_future(grouped(2))
    assert await first == 10
    with pytest.raises(asyncio.CancelledError):
        await second
    assert unclaimed == [20]
