from __future__ import annotations

import random

import pytest

from bot.features.jobs.buttons import (
    DESCRIBE_ACTIONS,
    LABELS,
    UPSCALE_ACTIONS,
    describe_buttons,
    diffusion_buttons,
    modal_for,
    read_settings,
    task_buttons,
)
from bot.features.jobs.region_preview import EDIT_ACTION
from bot.kernel import MODAL_ACTIONS, CommandError, decode_custom_id

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


def labels(rows) -> list[list[str]]:  # type: ignore[no-untyped-def]
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


def test_forms_open_exactly_for_the_modal_actions_and_fit_platform_limits() -> None:
    opened = {action for action in [*LABELS, "settings"] if modal_for(action, REF) is not None}
    assert opened | {EDIT_ACTION} == set(MODAL_ACTIONS), "a preview's ✏️ Edit opens Vary (Region)"
    for action in opened:
        modal = modal_for(action, REF, prompt="p" * 5000)
        assert modal is not None
        assert modal.action == action and modal.ref == REF
        assert len(modal.custom_id) <= 100
        assert len(modal.title) <= 45 and 1 <= len(modal.fields) <= 5
        for field in modal.fields:
            assert len(field.label) <= 45 and len(field.placeholder) <= 100
            assert len(field.default) <= field.max_length


def test_form_fields_and_prefills() -> None:
    zoom = modal_for("outpaint_custom", "r", prompt="a fox --v 6")
    assert zoom is not None
    assert [f.id for f in zoom.fields] == ["zoom", "zoom_value", "prompt"]
    assert zoom.fields[2].default == "a fox --v 6"
    region = modal_for("vary_region", "r")
    assert region is not None and [f.id for f in region.fields] == ["area", "region", "prompt"]
    init = modal_for("diff_init", "r")
    assert init is not None and [f.id for f in init.fields] == ["prompt", "strength"]
    settings = modal_for("settings", "", defaults={"model": "llm-4"})
    assert settings is not None
    assert [f.id for f in settings.fields] == [
        "model",
        "temperature",
        "process_mode",
        "aspect_ratio",
        "remix",
    ]
    assert settings.fields[0].default == "llm-4"
    assert not any(f.required for f in settings.fields)
    channel = modal_for("settings", "channel")
    assert channel is not None and [f.id for f in channel.fields][-1] == "system_prompt"


def test_reading_a_submitted_settings_form() -> None:
    assert read_settings({"model": "LLM-4", "temperature": "0.3", "aspect_ratio": ""}) == {
        "model": "llm-4",
        "temperature": 0.3,
    }
    with pytest.raises(CommandError, match="aspect_ratio must look like 16:9"):
        read_settings({"aspect_ratio": "wide"})


def test_the_settings_form_suggests_the_models_it_is_given() -> None:
    modal = modal_for("settings", "", models=("llm-3.5-turbo", "llm-3.5-turbo-16k"))
    assert modal is not None
    [model] = [field for field in modal.fields if field.id == "model"]
    assert model.placeholder == "llm-3.5-turbo, llm-3.5-turbo-16k"
