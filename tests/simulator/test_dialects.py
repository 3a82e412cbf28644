"""``--dialect spec``: a provider that knows only what the API documentation states."""

from __future__ import annotations

from tests.simulator.conftest import running

DOCUMENTED_GRID_ACTIONS = {
    "reroll",
    *(f"upscale{i}" for i in range(1, 5)),
    *(f"variation{i}" for i in range(1, 5)),
}


async def test_only_first_grids_carry_actions_and_exactly_the_documented_ones() -> None:
    async with running(dialect="spec") as api:
        grid = await api.imagine("a fox --v 6")
        upscale = await api.upscale(grid)
        variation = await api.finished("variation", {"origin_task_id": grid, "index": "2"})
        second = await api.finished("upscale", {"origin_task_id": upscale, "index": "subtle"})

        assert set((await api.fetch(grid))["task_result"]["actions"]) == DOCUMENTED_GRID_ACTIONS
        for derivative in (upscale, variation, second):
            assert (await api.fetch(derivative))["task_result"]["actions"] == []


async def test_the_default_dialect_offers_follow_ups_on_derivatives() -> None:
    async with running() as api:
        grid = await api.imagine("a fox --v 6")
        upscale = await api.upscale(grid)
        assert "outpaint_2" in (await api.fetch(upscale))["task_result"]["actions"]
