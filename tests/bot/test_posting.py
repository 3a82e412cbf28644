"""The one budgeted-write path: what each :class:`WritePolicy` does when the budget has no room
or the platform refuses — on a virtual clock."""

from __future__ import annotations

import asyncio

import pytest

from bot.budget import RenderBudget
from bot.kernel import Place, RateLimited, SurfaceLimits
from bot.posting import (
    ATTEMPTS,
    SKIP_WAIT,
    URGENT_WAIT,
    WritePolicy,
    WriteRateLimited,
    WriteSkipped,
    budgeted_write,
)
from tests.fakes.clock import FakeClock
from tests.fakes.surface import BudgetSurface

PLACE = Place("fake", "w1", "c1")
ONE_PER_SECOND = SurfaceLimits(edits_per_window_per_channel=1, edit_window_seconds=1.0)


class Platform:
    """A write that the platform refuses ``refusals`` times ("retry after ``retry_after``"),
    recording when each call arrived."""

    def __init__(self, fake: FakeClock, refusals: int = 0, retry_after: float = 0.5) -> None:
        self.fake = fake
        self.refusals = refusals
        self.retry_after = retry_after
        self.calls: list[float] = []

    async def write(self) -> str:
        self.calls.append(self.fake.now)
        if len(self.calls) <= self.refusals:
            raise RateLimited(self.retry_after)
        return "written"


async def _busy_for(fake: FakeClock, budget: RenderBudget, seconds: float) -> asyncio.Task[None]:
    """Hold the channel's only write until ``seconds`` from now."""
    grant = await budget.acquire(PLACE, ONE_PER_SECOND, urgent=True, hold=True)

    async def finish_later() -> None:
        await fake.sleep(seconds)
        grant.finish()

    return asyncio.ensure_future(finish_later())


@pytest.mark.parametrize("policy", [WritePolicy.MUST_DELIVER, WritePolicy.RAISE])
async def test_a_write_that_must_land_waits_for_room(policy: WritePolicy) -> None:
    fake = FakeClock()
    budget = RenderBudget(fake.clock, margin=0.0)
    surface = BudgetSurface(fake.monotonic, ONE_PER_SECOND)
    platform = Platform(fake)

    async def scenario() -> str:
        busy = await _busy_for(fake, budget, 5.0)
        written = await budgeted_write(budget, surface, PLACE, platform.write, policy)
        await busy
        return written

    assert await fake.run(scenario()) == "written"
    assert platform.calls == [6.0]


@pytest.mark.parametrize("policy", [WritePolicy.MUST_DELIVER, WritePolicy.RAISE])
async def test_a_write_that_must_land_goes_out_anyway_when_no_room_comes_in_time(
    policy: WritePolicy,
) -> None:
    fake = FakeClock()
    budget = RenderBudget(fake.clock, margin=0.0)
    surface = BudgetSurface(fake.monotonic, ONE_PER_SECOND)
    platform = Platform(fake)

    async def scenario() -> str:
        busy = await _busy_for(fake, budget, URGENT_WAIT * 2)
        written = await budgeted_write(budget, surface, PLACE, platform.write, policy)
        busy.cancel()
        return written

    assert await fake.run(scenario()) == "written"
    assert len(platform.calls) == 1 and platform.calls[0] <= URGENT_WAIT


async def test_a_progress_write_is_skipped_when_the_channel_is_busy() -> None:
    fake = FakeClock()
    budget = RenderBudget(fake.clock, margin=0.0)
    surface = BudgetSurface(fake.monotonic, ONE_PER_SECOND)
    platform = Platform(fake)

    async def scenario() -> None:
        busy = await _busy_for(fake, budget, 5.0)
        try:
            await budgeted_write(budget, surface, PLACE, platform.write, WritePolicy.SKIP_IF_BUSY)
        finally:
            busy.cancel()

    with pytest.raises(WriteSkipped):
        await fake.run(scenario())
    assert platform.calls == [] and fake.now <= SKIP_WAIT


async def test_a_progress_write_refused_by_the_platform_is_skipped_and_holds_the_channel() -> None:
    fake = FakeClock()
    budget = RenderBudget(fake.clock, margin=0.0)
    surface = BudgetSurface(fake.monotonic, ONE_PER_SECOND)
    platform = Platform(fake, refusals=100, retry_after=4.0)

    async def scenario() -> float:
        with pytest.raises(WriteSkipped):
            await budgeted_write(budget, surface, PLACE, platform.write, WritePolicy.SKIP_IF_BUSY)
        await budget.acquire(PLACE, ONE_PER_SECOND, urgent=True)
        return fake.now

    assert await fake.run(scenario()) >= 4.0
    assert platform.calls == [0.0]


@pytest.mark.parametrize("policy", [WritePolicy.MUST_DELIVER, WritePolicy.RAISE])
async def test_a_refused_write_is_retried_after_the_retry_after(policy: WritePolicy) -> None:
    fake = FakeClock()
    budget = RenderBudget(fake.clock, margin=0.0)
    surface = BudgetSurface(fake.monotonic, ONE_PER_SECOND)
    platform = Platform(fake, refusals=1, retry_after=2.0)

    assert await fake.run(budgeted_write(budget, surface, PLACE, platform.write, policy)) == (
        "written"
    )
    assert len(platform.calls) == 2 and platform.calls[1] >= 2.0


async def test_a_chat_write_the_platform_keeps_refusing_tells_the_user() -> None:
    fake = FakeClock()
    budget = RenderBudget(fake.clock, margin=0.0)
    surface = BudgetSurface(fake.monotonic, ONE_PER_SECOND)
    platform = Platform(fake, refusals=100)

    with pytest.raises(WriteRateLimited):
        await fake.run(budgeted_write(budget, surface, PLACE, platform.write, WritePolicy.RAISE))
    assert len(platform.calls) == ATTEMPTS


async def test_a_job_write_the_platform_keeps_refusing_goes_out_once_more_regardless() -> None:
    fake = FakeClock()
    budget = RenderBudget(fake.clock, margin=0.0)
    surface = BudgetSurface(fake.monotonic, ONE_PER_SECOND)
    refusing = Platform(fake, refusals=100)
    delivered = Platform(fake, refusals=ATTEMPTS)

    with pytest.raises(RateLimited):
        await fake.run(
            budgeted_write(budget, surface, PLACE, refusing.write, WritePolicy.MUST_DELIVER)
        )
    assert len(refusing.calls) == ATTEMPTS + 1
    write = budgeted_write(budget, surface, PLACE, delivered.write, WritePolicy.MUST_DELIVER)
    assert await fake.run(write) == "written"
    assert len(delivered.calls) == ATTEMPTS + 1
