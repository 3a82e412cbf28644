"""Derivative endpoints: index rules by version, outpaint zoom, pan, inpaint, reroll, seed and the
same-index rule."""

from __future__ import annotations

import pytest

from tests.simulator.conftest import Api


@pytest.mark.parametrize(
    ("version", "allowed", "refused"),
    [
        ("4", ["light", "beta"], ["2x", "4x", "subtle", "creative"]),
        ("5", ["2x", "4x"], ["light", "beta", "subtle", "creative"]),
        ("5.1", ["2x", "4x"], ["light", "subtle"]),
        ("5.2", ["2x", "4x"], ["beta", "creative"]),
        ("6", ["subtle", "creative"], ["light", "beta", "2x", "4x"]),
    ],
)
async def test_second_upscale_indexes_depend_on_the_version(
    api: Api, version: str, allowed: list[str], refused: list[str]
) -> None:
    grid = await api.imagine(f"a fox --v {version}")
    first = await api.upscale(grid, "2")
    for index in refused:
        message = await api.refused("upscale", {"origin_task_id": first, "index": index})
        assert message.startswith(f"upscale index {index} is only for version")
        assert message.endswith(f"(this task is version {version})")
    for index in allowed:
        second = await api.upscale(first, index)
        task = api.sim.state.tasks[second]
        assert (task.version, task.index, task.kind) == (version, index, "upscale")


async def test_upscale_index_rules(api: Api) -> None:
    grid = await api.imagine()
    first = await api.upscale(grid, "1")
    message = await api.refused("upscale", {"origin_task_id": grid, "index": "5"})
    assert message.startswith("upscale index must be one of 1, 2, 3, 4, light, beta, 2x, 4x")
    message = await api.refused("upscale", {"origin_task_id": grid, "index": "subtle"})
    assert message == "upscale index subtle needs an upscale (index 1-4) task as origin"
    message = await api.refused("upscale", {"origin_task_id": first, "index": "2"})
    assert message == "upscale index 2 needs a task with a 2x2 grid as origin"
    subtle = await api.upscale(first, "subtle")
    message = await api.refused("upscale", {"origin_task_id": subtle, "index": "creative"})
    assert message == "upscale index creative needs an upscale (index 1-4) task as origin"


async def test_variation_index_rules(api: Api) -> None:
    old_grid = await api.imagine("a fox --v 5.1")
    old_upscale = await api.upscale(old_grid, "3")
    message = await api.refused(
        "variation", {"origin_task_id": old_upscale, "index": "low_variation"}
    )
    assert message == (
        "variation index low_variation is only for version 5.2 and 6 tasks "
        "(this task is version 5.1)"
    )
    grid = await api.imagine("a fox --v 5.2")
    upscale = await api.upscale(grid, "3")
    for index in ("1", "4"):
        await api.finished("variation", {"origin_task_id": grid, "index": index})
    for index in ("high_variation", "low_variation"):
        await api.finished("variation", {"origin_task_id": upscale, "index": index})
    message = await api.refused("variation", {"origin_task_id": grid, "index": "high_variation"})
    assert message == "variation index high_variation needs an upscale task as origin"
    message = await api.refused("variation", {"origin_task_id": upscale, "index": "2"})
    assert message == "variation index 2 needs a task with a 2x2 grid as origin"
    message = await api.refused("variation", {"origin_task_id": grid, "index": "strong"})
    assert message.startswith("variation index must be one of 1, 2, 3, 4, high_variation")


async def test_derivatives_inherit_version_and_mode_and_refuse_process_mode(api: Api) -> None:
    grid = await api.imagine("a fox --v 5.2 --turbo")
    upscale = await api.upscale(grid, "1")
    for endpoint, body in (
        ("reroll", {"origin_task_id": grid}),
        ("variation", {"origin_task_id": grid, "index": "2"}),
        ("outpaint", {"origin_task_id": upscale, "zoom_ratio": "2"}),
        ("pan", {"origin_task_id": upscale, "direction": "up"}),
        ("inpaint", {"origin_task_id": upscale, "mask": "aGVsbG8="}),
        ("upscale", {"origin_task_id": grid, "index": "2"}),
    ):
        message = await api.refused(endpoint, {**body, "process_mode": "fast"})
        assert message == (
            f"process_mode is not accepted by {endpoint}; it inherits the mode of its origin task"
        )
        task_id = await api.create(endpoint, {**body, "prompt": "a wolf --relax --v 6"}
                                   if endpoint not in ("upscale",) else body)  # fmt: skip
        task = api.sim.state.tasks[task_id]
        assert (task.version, task.mode, task.origin_task_id) == (
            "5.2",
            "turbo",
            body["origin_task_id"],
        )


async def test_reroll_uses_the_parent_prompt_unless_given_and_needs_a_grid(api: Api) -> None:
    grid = await api.imagine("a red fox --ar 16:9")
    rerolled = await api.create("reroll", {"origin_task_id": grid})
    task = api.sim.state.tasks[rerolled]
    assert (task.prompt, task.aspect) == ("a red fox --ar 16:9", (16, 9))
    other = await api.create("reroll", {"origin_task_id": grid, "prompt": "a blue fox"})
    assert (api.sim.state.tasks[other].prompt, api.sim.state.tasks[other].aspect) == (
        "a blue fox",
        (1, 1),
    )
    upscale = await api.upscale(grid)
    message = await api.refused("reroll", {"origin_task_id": upscale})
    assert message == "reroll needs a task with a 2x2 grid as origin"


@pytest.mark.parametrize(
    ("aspect", "zoom", "allowed"),
    [
        ("1:1", "1.5", True),
        ("1:1", "2", True),
        ("1:1", "1.25", True),
        ("1:1", "1", False),
        ("16:9", "1", True),
        ("16:9", "1.5", True),
        ("16:9", "2", True),
    ],
)
async def test_outpaint_square_and_non_square_zoom_rule(
    api: Api, aspect: str, zoom: str, allowed: bool
) -> None:
    upscale = await api.upscale(await api.imagine("a fox", aspect_ratio=aspect))
    body = {"origin_task_id": upscale, "zoom_ratio": zoom, "aspect_ratio": aspect}
    if not allowed:
        message = await api.refused("outpaint", body)
        assert message == "zoom_ratio 1 (make square) applies only to non-square images"
        return
    task_id = await api.create("outpaint", body)
    expected = (1, 1) if zoom == "1" else tuple(int(n) for n in aspect.split(":"))
    assert api.sim.state.tasks[task_id].aspect == expected


@pytest.mark.parametrize("zoom", ["0.5", "2.5", "abc", "nan", "0"])
async def test_outpaint_zoom_out_of_range_is_refused(api: Api, zoom: str) -> None:
    upscale = await api.upscale(await api.imagine())
    message = await api.refused("outpaint", {"origin_task_id": upscale, "zoom_ratio": zoom})
    assert message.startswith("zoom_ratio must be")


async def test_outpaint_pan_and_inpaint_need_an_upscale(api: Api) -> None:
    grid = await api.imagine()
    for endpoint, body in (
        ("outpaint", {"zoom_ratio": "2"}),
        ("pan", {"direction": "left"}),
        ("inpaint", {"mask": "aGVsbG8="}),
    ):
        message = await api.refused(endpoint, {"origin_task_id": grid, **body})
        assert message == f"{endpoint} needs an upscale task as origin"


async def test_pan_directions_extend_the_canvas(api: Api) -> None:
    upscale = await api.upscale(await api.imagine())
    message = await api.refused("pan", {"origin_task_id": upscale, "direction": "north"})
    assert message == "direction must be one of up, down, left, right (got 'north')"
    expected = {"left": (3, 2), "right": (3, 2), "up": (2, 3), "down": (2, 3)}
    for direction, aspect in expected.items():
        task_id = await api.create("pan", {"origin_task_id": upscale, "direction": direction})
        assert api.sim.state.tasks[task_id].aspect == aspect
        assert api.sim.state.tasks[task_id].task_input["direction"] == direction
    default = await api.create("pan", {"origin_task_id": upscale})
    assert api.sim.state.tasks[default].task_input["direction"] == "right"


@pytest.mark.parametrize("mask", ["", "not base64!", "aGVsbG8"])
async def test_inpaint_mask_must_be_base64(api: Api, mask: str) -> None:
    upscale = await api.upscale(await api.imagine())
    message = await api.refused("inpaint", {"origin_task_id": upscale, "mask": mask})
    assert message == "mask must be a non-empty base64-encoded image"


async def test_inpaint_accepts_plain_and_data_url_masks(api: Api) -> None:
    upscale = await api.upscale(await api.imagine())
    for mask in ("aGVsbG8=", "data:image/png;base64,aGVsbG8="):
        await api.finished("inpaint", {"origin_task_id": upscale, "mask": mask, "prompt": "a hat"})


async def test_same_index_is_refused_per_origin_and_endpoint(api: Api) -> None:
    grid = await api.imagine()
    await api.create("upscale", {"origin_task_id": grid, "index": "1"})
    message = await api.failed("upscale", {"origin_task_id": grid, "index": "1"})
    assert message == "task with same index already created"
    await api.create("upscale", {"origin_task_id": grid, "index": "2"})
    await api.create("variation", {"origin_task_id": grid, "index": "1"})
    message = await api.failed("variation", {"origin_task_id": grid, "index": "1"})
    assert message == "task with same index already created"
    other = await api.imagine()
    await api.create("upscale", {"origin_task_id": other, "index": "1"})
    assert api.sim.state.creations == {"imagine": 2, "upscale": 3, "variation": 1}


async def test_same_index_may_be_created_again_after_the_first_failed(api: Api) -> None:
    grid = await api.imagine()
    failing = await api.create(
        "variation", {"origin_task_id": grid, "index": "3", "prompt": "fail"}
    )
    api.sim.advance(100_000)
    assert (await api.fetch(failing))["status"] == "failed"
    await api.create("variation", {"origin_task_id": grid, "index": "3"})


async def test_seed_task_fills_task_result_seed(api: Api) -> None:
    grid = await api.imagine()
    seed_task = await api.finished("seed", {"task_id": grid})
    record = await api.fetch(seed_task)
    assert record["task_type"] == "seed"
    assert record["task_result"]["seed"] == str(api.sim.state.tasks[grid].art_seed)
    assert record["task_result"]["seed"].isdigit()
    assert record["task_result"]["credit"] == 0
    assert (await api.fetch(grid))["task_result"]["seed"] == ""
    describe = await api.finished("describe", {"image_url": "https://images.example/a.png"})
    message = await api.refused("seed", {"task_id": describe})
    assert message == "seed needs an image generation task (one with images)"
