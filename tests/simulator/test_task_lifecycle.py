"""Task lifecycle on the simulated clock: statuses, durations per mode, retry and staged phases,
trigger-word failures, process_time, and credits frozen, charged and released."""

from __future__ import annotations

import random

import pytest

from simulator.task_model import plan_lifecycle
from tests.simulator.conftest import KEY, Api, running


def _status_timeline(api: Api, task_id: str) -> list[str]:
    return [status for status, _ in api.sim.state.tasks[task_id].lifecycle.phases]


async def test_statuses_follow_the_planned_phases_as_time_advances(api: Api) -> None:
    task_id = await api.create("imagine", {"prompt": "a fox", "process_mode": "fast"})
    task = api.sim.state.tasks[task_id]
    seen = []
    elapsed = 0.0
    for status, starts in (*task.lifecycle.phases, ("finished", task.lifecycle.ends_after)):
        api.sim.advance(starts - elapsed + 0.01)
        elapsed = starts + 0.01
        record = await api.fetch(task_id)
        assert record["status"] == status
        assert record["process_time"] == pytest.approx(elapsed if status != "finished"
                                                       else task.lifecycle.ends_after)  # fmt: skip
        seen.append(record["status"])
    assert seen[0] in ("staged", "pending") and seen[-1] == "finished" and "processing" in seen
    api.sim.advance(500)
    assert (await api.fetch(task_id))["process_time"] == task.lifecycle.ends_after


@pytest.mark.parametrize(
    ("mode", "queue", "run"), [("relax", 20, 40), ("fast", 4, 16), ("turbo", 1, 7)]
)
async def test_documented_durations_per_mode(mode: str, queue: float, run: float) -> None:
    for seed in range(40):
        life = plan_lifecycle(random.Random(seed), "grid", mode, 1.0, None)  # type: ignore[arg-type]
        statuses = [status for status, _ in life.phases]
        extra = (queue / 2 if "staged" in statuses else 0) + (
            queue / 2 if "retry" in statuses else 0
        )
        assert life.ends_after == pytest.approx(queue + run + extra)
        assert life.outcome == "finished"
    assert min(
        plan_lifecycle(random.Random(s), "upscale", mode, 1.0, None).ends_after  # type: ignore[arg-type]
        for s in range(40)
    ) == pytest.approx((queue + run) / 2)


def test_a_staged_task_is_staged_before_it_is_queued() -> None:
    # Spec 3.1: staged is "cached, not yet in the queue", pending "waiting in the queue".
    lives = [plan_lifecycle(random.Random(s), "grid", "fast", 1.0, None) for s in range(40)]
    starts = {tuple(status for status, _ in life.phases)[:3] for life in lives}
    assert ("staged", "pending", "processing") in starts
    assert all(start[:2] in (("staged", "pending"), ("pending", "processing")) for start in starts)


async def test_relax_is_slowest_and_turbo_fastest_and_time_scale_multiplies(api: Api) -> None:
    ends = {}
    for mode in ("relax", "fast", "turbo"):
        task_id = await api.create("imagine", {"prompt": "a fox", "process_mode": mode})
        ends[mode] = api.sim.state.tasks[task_id].lifecycle.ends_after
    assert ends["relax"] > ends["fast"] > ends["turbo"] > 0
    half = plan_lifecycle(random.Random(1), "grid", "fast", 0.5, None)
    whole = plan_lifecycle(random.Random(1), "grid", "fast", 1.0, None)
    assert half.ends_after == pytest.approx(whole.ends_after / 2)


async def test_time_scale_zero_finishes_at_the_first_fetch() -> None:
    async with running(time_scale=0.0) as api:
        task_id = await api.create("imagine", {"prompt": "a fox"})
        record = await api.fetch(task_id)
        assert record["status"] == "finished"
        assert record["task_result"]["image_url"]


async def test_staged_and_retry_happen_sometimes_and_retry_count_counts_them(api: Api) -> None:
    ids = [await api.create("imagine", {"prompt": f"fox {n}", "process_mode": "turbo"})
           for n in range(30)]  # fmt: skip
    timelines = {task_id: _status_timeline(api, task_id) for task_id in ids}
    staged = [t for t, statuses in timelines.items() if "staged" in statuses]
    retried = [t for t, statuses in timelines.items() if "retry" in statuses]
    assert staged and retried
    assert len(staged) < 30 and len(retried) < 30
    task = api.sim.state.tasks[retried[0]]
    retry_at = next(starts for status, starts in task.lifecycle.phases if status == "retry")
    api.sim.advance(retry_at + 0.01)
    status, answer = await api.post("/gen/v2/multi_fetch", {"task_ids": [retried[0]]})
    assert status == 200
    assert answer["data"][retried[0]]["status"] == "retry"
    assert answer["data"][retried[0]]["retry_count"] == 1
    api.sim.advance(1000)
    _, answer = await api.post("/gen/v2/multi_fetch", {"task_ids": [retried[0]]})
    assert answer["data"][retried[0]]["status"] == "finished"


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        ("please fail now", "Simulated failure: the prompt asked the job to fail."),
        (
            "a FORBIDDEN thing",
            "Banned prompt detected: the job was refused by the moderation check.",
        ),
    ],
)
async def test_trigger_words_fail_the_task_during_execution(
    api: Api, prompt: str, message: str
) -> None:
    task_id = await api.create("imagine", {"prompt": prompt})
    assert (await api.fetch(task_id))["status"] in ("staged", "pending")
    api.sim.advance(1000)
    record = await api.fetch(task_id)
    assert record["status"] == "failed"
    assert record["task_result"]["error_messages"] == [message]
    assert record["task_result"]["image_url"] == "" and record["task_result"]["actions"] == []
    assert "processing" in _status_timeline(api, task_id)


async def test_words_merely_containing_a_trigger_do_not_fail(api: Api) -> None:
    task_id = await api.imagine("failure is a teacher, unforbidden joy")
    assert (await api.fetch(task_id))["task_result"]["error_messages"] == []


async def test_describe_and_blend_urls_can_trigger_failures(api: Api) -> None:
    describe = await api.create("describe", {"image_url": "https://img.example/fail.png"})
    blend = await api.create(
        "blend", {"image_urls": ["https://img.example/forbidden.png", "https://img.example/b.png"]}
    )
    api.sim.advance(1000)
    assert (await api.fetch(describe))["status"] == "failed"
    assert (await api.fetch(blend))["status"] == "failed"


@pytest.mark.parametrize(
    ("endpoint_mode", "price"), [("relax", 4), ("mixed", 4), ("fast", 8), ("turbo", 16)]
)
async def test_credits_are_frozen_at_creation_and_charged_at_finish(
    api: Api, endpoint_mode: str, price: int
) -> None:
    account = api.sim.state.accounts[KEY]
    task_id = await api.create("imagine", {"prompt": "a fox", "process_mode": endpoint_mode})
    assert (account.balance, account.frozen, account.charged) == (10000 - price, price, 0)
    record = await api.fetch(task_id)
    assert record["meta"]["frozen_credit"] == price and record["task_result"]["credit"] == 0
    api.sim.advance(1000)
    assert (account.balance, account.frozen, account.charged) == (10000 - price, 0, price)
    assert (await api.fetch(task_id))["task_result"]["credit"] == price


async def test_credits_are_released_when_the_task_fails(api: Api) -> None:
    account = api.sim.state.accounts[KEY]
    await api.create("imagine", {"prompt": "fail please", "process_mode": "fast"})
    assert (account.balance, account.frozen) == (9992, 8)
    api.sim.advance(1000)
    assert (account.balance, account.frozen, account.charged) == (10000, 0, 0)


async def test_prices_of_other_task_types(api: Api) -> None:
    account = api.sim.state.accounts[KEY]
    grid = await api.imagine("a fox --fast")
    spent = account.charged
    upscale = await api.upscale(grid)
    assert account.charged - spent == 2
    spent = account.charged
    await api.upscale(upscale, "creative")
    assert account.charged - spent == 4
    spent = account.charged
    await api.finished(
        "describe", {"image_url": "https://img.example/a.png", "process_mode": "turbo"}
    )
    assert account.charged - spent == 4
    spent = account.charged
    await api.finished("seed", {"task_id": grid})
    assert account.charged - spent == 0


async def test_advance_endpoint_moves_the_clock(api: Api) -> None:
    task_id = await api.create("imagine", {"prompt": "a fox", "process_mode": "turbo"})
    status, answer = await api.post("/_sim/advance", {"seconds": 1000})
    assert status == 200 and answer["now"] == 1_700_001_000.0
    assert (await api.fetch(task_id))["status"] == "finished"
    for bad in ({"seconds": -1}, {"seconds": "ten"}, {}, {"seconds": True}):
        status, answer = await api.post("/_sim/advance", bad)
        assert status == 400 and answer["error"]["message"] == 'send {"seconds": N} with N >= 0'
