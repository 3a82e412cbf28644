"""Result messages: the image is downloaded from the first of the record's links that works;
the buttons under a result, arranged from the button vocabulary."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from bot.features.jobs.buttons import DESCRIBE_ACTIONS, LABELS, UPSCALE_ACTIONS
from bot.features.jobs.result_messages import (
    describe_buttons,
    diffusion_buttons,
    follow_up_buttons,
    task_buttons,
)
from bot.kernel import Button, decode_custom_id
from tests.bot.features.jobs.support import job_record, run_command
from tests.bot.harness import harness


async def test_a_result_whose_image_url_fails_is_downloaded_from_the_next_link(
    tmp_path: Path,
) -> None:
    # docs/provider.md#image-url-fields: image_url, else permanent_url, else host_url.
    async with harness(tmp_path) as bot:
        job, _ = await run_command(bot, bot.actor(), "imagine", prompt="a red fox")
        done = await bot.settled(job.id)
        _, permanent_url, host_url = done.result_urls
        assert "/permanent/" in permanent_url and "/host/" in host_url
        broken = f"{bot.sim.base_url}/images/{'0' * 32}.png"
        moved = dataclasses.replace(done, result_urls=[broken, permanent_url, host_url])
        message, size = await bot.jobs.delivery.results.result(moved, link_instead=False)
        [image] = message.images
        assert image.data == (await bot.jobs.media.fetch(permanent_url)).data
        assert size == (512, 512)


GRID = ["reroll", *(f"upscale{i}" for i in range(1, 5)), *(f"variation{i}" for i in range(1, 5))]
V6_UPSCALE = [
    "high_variation",
    "low_variation",
    "vary_region",
    "outpaint_2",
    "outpaint_1.5",
    "outpaint_custom",
    "pan_left",
    "pan_right",
    "pan_up",
    "pan_down",
    "upscale_subtle",
    "upscale_creative",
]
REF = "0123456789abcdef"


def labels(rows: Sequence[Sequence[Button]]) -> list[list[str]]:
    return [[button.label for button in row] for row in rows]


def test_a_grid_gets_u_and_v_rows() -> None:
    shuffled = GRID[:]
    random.Random(4).shuffle(shuffled)
    rows = task_buttons(shuffled, "job1")
    assert labels(rows) == [["U1", "U2", "U3", "U4", "🔄"], ["V1", "V2", "V3", "V4"]]
    assert rows[0][0].action == "upscale1" and rows[0][0].ref == "job1"
    assert rows[0][4].action == "reroll"


def test_an_upscale_gets_its_follow_ups_and_a_seed_button() -> None:
    rows = task_buttons(V6_UPSCALE, "job2")
    assert labels(rows) == [
        ["Vary (Strong)", "Vary (Subtle)", "Vary (Region)"],
        ["Zoom Out 2x", "Zoom Out 1.5x", "Custom Zoom"],
        ["⬅️", "➡️", "⬆️", "⬇️"],
        ["Upscale (Subtle)", "Upscale (Creative)", "🌱 Seed", "Use as reference"],
    ]
    v5 = ["vary_region", "outpaint_2", "outpaint_square", "upscale_2x", "upscale_4x"]
    assert labels(task_buttons(v5, "j")) == [
        ["Vary (Region)"],
        ["Zoom Out 2x", "Make Square"],
        ["Upscale (2x)", "Upscale (4x)", "🌱 Seed", "Use as reference"],
    ]


def test_the_seed_button_can_be_forced_on_or_off() -> None:
    assert labels(task_buttons(GRID, "j", with_seed=True))[-1][-1] == "🌱 Seed"
    assert "🌱 Seed" not in [
        label for row in labels(task_buttons(V6_UPSCALE, "j", with_seed=False)) for label in row
    ]
    pans = ["pan_left", "pan_right", "pan_up", "pan_down"]
    assert labels(task_buttons(pans, "j")) == [
        ["⬅️", "➡️", "⬆️", "⬇️", "🌱 Seed"],
        ["Use as reference"],
    ]
    full = ["upscale_subtle", "upscale_creative", "upscale_2x", "upscale_4x", "upscale_light"]
    assert labels(task_buttons(full, "j"))[-1] == ["🌱 Seed", "Use as reference"]


def test_every_follow_up_at_once_still_fits_five_rows_of_five() -> None:
    rows = task_buttons(sorted(UPSCALE_ACTIONS), REF)
    assert len(rows) <= 5 and all(len(row) <= 5 for row in rows)
    actions = [button.action for row in rows for button in row]
    assert sorted(actions) == sorted([*UPSCALE_ACTIONS, "seed", "use_reference"])


def test_tighter_limits_pack_densely_and_drop_the_excess() -> None:
    rows = task_buttons(sorted(UPSCALE_ACTIONS), "j", max_per_row=4, max_rows=3)
    assert [len(row) for row in rows] == [4, 4, 4]


def test_unknown_actions_are_ignored_and_pressed_ones_are_primary() -> None:
    rows = task_buttons([*GRID, "make_coffee"], "j", pressed={"upscale2"})
    assert "make_coffee" not in [b.action for row in rows for b in row]
    styles = {b.action: b.style for row in rows for b in row}
    assert styles["upscale2"] == "primary" and styles["upscale1"] == "secondary"


def test_describe_and_diffusion_buttons() -> None:
    assert labels(describe_buttons("d")) == [["1", "2", "3", "4", "🔄"], ["Imagine all"]]
    picks, (imagine_all,) = describe_buttons("d")
    assert [b.action for b in picks] == [*DESCRIBE_ACTIONS, "describe_again"]
    assert imagine_all.action == "describe_all"
    assert labels(describe_buttons("d", 2, pressed={"describe_pick2"})) == [
        ["1", "2", "🔄"],
        ["Imagine all"],
    ]
    assert describe_buttons("d", 2, pressed={"describe_pick2"})[0][1].style == "primary"
    assert labels(diffusion_buttons("x")) == [["🔄", "Upscale", "Use as init", "Use as reference"]]
    assert labels(diffusion_buttons("x", upscale=False)) == [
        ["🔄", "Use as init", "Use as reference"]
    ]


def test_info_comes_last_on_a_row_with_room_else_on_a_row_of_its_own() -> None:
    diffusion = diffusion_buttons("x", info=True)
    assert labels(diffusion) == [["🔄", "Upscale", "Use as init", "Use as reference", "ℹ️"]]
    assert diffusion[0][-1].custom_id == "gb:info:x"
    grid = [*(f"upscale{i}" for i in range(1, 5)), "reroll"]
    assert labels(task_buttons(grid, "x", info=True)) == [["U1", "U2", "U3", "U4", "🔄"], ["ℹ️"]]
    assert labels(task_buttons(["seed"], "x", info=True)) == [["🌱 Seed", "ℹ️"]]
    assert labels(task_buttons([], "x", info=True)) == [["ℹ️"]]
    assert labels(describe_buttons("x", 1, info=True)) == [["1", "🔄"], ["Imagine all", "ℹ️"]]


@pytest.mark.parametrize("action", sorted(LABELS))
def test_every_custom_id_fits_with_a_16_character_ref(action: str) -> None:
    button = next(
        b
        for rows in (
            task_buttons([action], REF, with_seed=True),
            task_buttons([action.removeprefix("remix_")], REF, remix=True),
            describe_buttons(REF),
            diffusion_buttons(REF, info=True),
        )
        for row in rows
        for b in row
        if b.action == action
    )
    assert len(button.custom_id) <= 100
    assert decode_custom_id(button.custom_id) == (action, REF)


def test_refused_follow_ups_are_drawn_disabled() -> None:
    job = job_record(
        status="posted",
        provider_id="t1",
        type="upscale",
        action="upscale1",
        result={"refused_actions": ["pan_left"]},
    )
    buttons = {b.action: b for row in follow_up_buttons(job) for b in row}
    assert buttons["pan_left"].disabled and not buttons["pan_right"].disabled
    assert buttons["seed"].label == "🌱 Seed"
