"""The editors' forms: what they ask, how submissions are read, and how they come back."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.features.jobs.forms import (
    AREA_CHOICES,
    ZOOM_CHOICES,
    diffusion_upload_form,
    form_for,
    parse_zoom,
    read_init,
    read_region,
    read_remix,
    read_zoom,
    refused_form,
    region_map,
)
from bot.features.jobs.masks import PRESETS, Polygon, Region, build_mask
from bot.kernel import (
    CommandError,
    FormError,
    OptionValue,
    command,
    parse_command_text,
    validate_options,
)
from tests.bot.features.jobs.support import mask_pixels


@pytest.mark.parametrize(
    ("text", "zoom"),
    [
        ("1.8", "1.8"),
        (" 2 ", "2"),
        ("1.25x", "1.25"),
        ("1.50", "1.5"),
        ("1.04", "1.04"),
        ("1.0000001", "1.0000001"),
        ("1.999999999", "1.999999999"),
        ("2.000", "2"),
    ],
)
def test_custom_zoom_accepts_ratios_above_one_up_to_two(text: str, zoom: str) -> None:
    assert parse_zoom(text) == zoom


@pytest.mark.parametrize("text", ["1", "1.000", "1e0", "0.5", "2.01", "zoom", "", "nan", "inf"])
def test_custom_zoom_refuses_anything_else(text: str) -> None:
    with pytest.raises(CommandError, match="zoom"):
        parse_zoom(text)


def test_custom_zoom_offers_common_factors_and_a_free_value() -> None:
    form = form_for("outpaint_custom", "r", "a fox")
    assert form is not None
    factor, typed, prompt = form.fields
    assert factor.kind == "select" and [c.value for c in ZOOM_CHOICES] == [
        "1.25",
        "1.5",
        "1.75",
        "2",
    ]
    assert factor.default == "2" and typed.kind == "text" and prompt.default == "a fox"
    assert read_zoom({"zoom": "1.5", "zoom_value": "", "prompt": " "}).zoom_ratio == "1.5"
    assert read_zoom({"zoom": "1.5", "zoom_value": "1.8x"}).zoom_ratio == "1.8"
    assert read_zoom({"zoom": "1.5", "prompt": "  "}).prompt is None
    with pytest.raises(CommandError, match="Pick a zoom factor"):
        read_zoom({"zoom": "", "zoom_value": " "})


def test_a_refused_form_comes_back_with_the_values_and_the_error_beside_its_field() -> None:
    values = {"zoom": "", "zoom_value": "3", "prompt": "a wider fox"}
    with pytest.raises(FormError) as refused:
        read_zoom(values)
    assert refused.value.field == "zoom_value"
    form = form_for("outpaint_custom", "r", "a fox", values=values)
    assert form is not None
    again = refused_form(form, refused.value)
    assert again.errors == (("zoom_value", "The zoom must be above 1 and at most 2 (got 3)."),)
    assert again.error_of("zoom_value") == again.refusal and not again.notice
    assert [f.default for f in again.fields] == ["", "3", "a wider fox"]
    whole = refused_form(form, CommandError("That image is gone."))
    assert whole.notice == "That image is gone." and whole.errors == ()


def test_each_refused_value_names_its_field() -> None:
    assert _field(lambda: read_zoom({"zoom": "", "zoom_value": ""})) == "zoom_value"
    assert _field(lambda: read_zoom({"zoom": "9"})) == "zoom"
    assert _field(lambda: read_region({"area": "", "region": ""})) == "region"
    assert _field(lambda: read_region({"region": "somewhere nice"})) == "region"
    assert _field(lambda: read_init({"prompt": "a fox", "strength": "1.7"})) == "strength"
    assert _field(lambda: read_init({"prompt": " "})) == "prompt"
    assert _field(lambda: read_remix({"prompt": ""})) == "prompt"


def _field(read: Callable[[], object]) -> str:
    with pytest.raises(FormError) as refused:
        read()
    return refused.value.field


def test_vary_region_takes_a_preset_and_drawn_or_typed_areas() -> None:
    form = form_for("vary_region", "r", "a fox", image_url="https://img/1.png")
    assert form is not None
    area, drawn, what = form.fields
    assert area.kind == "select" and {c.value for c in AREA_CHOICES} == set(PRESETS)
    assert drawn.kind == "region" and drawn.image_url == "https://img/1.png"
    assert what.default == "a fox" and not form.notice
    region = read_region({"area": "left half", "region": "", "prompt": "a red door"})
    assert region.regions == (PRESETS["left half"],) and region.prompt == "a red door"
    both = read_region({"area": "top half", "region": "0,50,50,50"})
    assert both.regions == (PRESETS["top half"], Region(0, 0.5, 0.5, 0.5))
    outline = read_region({"region": "polygon 10 10 90 10 50 90"}).regions
    assert outline == (Polygon(((0.1, 0.1), (0.9, 0.1), (0.5, 0.9))),)
    with pytest.raises(CommandError, match="Which part of the image"):
        read_region({"area": "", "region": ""})
    with pytest.raises(CommandError, match="region"):
        read_region({"region": "somewhere nice"})


def test_the_region_form_previews_the_chosen_area_as_a_map() -> None:
    again = form_for("vary_region", "r", "a fox", values={"area": "left half"})
    assert again is not None
    assert again.notice == "Area:\n" + "\n".join(["🟦🟦🟦⬛⬛⬛"] * 6)
    assert region_map([PRESETS["center"]], side=4).split("\n") == [
        "⬛⬛⬛⬛",
        "⬛🟦🟦⬛",
        "⬛🟦🟦⬛",
        "⬛⬛⬛⬛",
    ]


def test_an_outline_becomes_its_inside_in_the_mask() -> None:
    triangle = Polygon(((0.0, 0.0), (1.0, 0.0), (0.0, 1.0)))
    pixels = mask_pixels(build_mask([triangle], (100, 100)).base64)
    assert pixels.getpixel((10, 10)) == 255 and pixels.getpixel((90, 90)) == 0


def test_use_as_init_is_prefilled_with_the_prompt() -> None:
    form = form_for("diff_init", "r", "an autumn fox")
    assert form is not None and form.fields[0].default == "an autumn fox"
    init = read_init({"prompt": "autumn fox", "strength": "0.4"})
    assert init.prompt == "autumn fox" and init.strength == 0.4
    assert read_init({"prompt": "x", "strength": ""}).strength is None
    with pytest.raises(CommandError, match="strength must be at most 1"):
        read_init({"prompt": "x", "strength": "1.5"})
    with pytest.raises(CommandError, match="needs a prompt"):
        read_init({"prompt": " "})


def test_a_diffusion_upload_form_carries_the_commands_options_as_flags_that_parse_back() -> None:
    spec = command("diffusion.controlnet")
    given: dict[str, OptionValue] = {
        "prompt": "a fox",
        "negative_prompt": 'blurry, "dark"',
        "controlnet_model": "canny",
        "strength": 0.6,
        "seed": 7,
        "width": 768,
    }

    form = diffusion_upload_form("controlnet", given)

    fields = {f.id: f for f in form.fields}
    assert [f.kind for f in form.fields] == ["file", "file", "file", "text", "text"]
    assert fields["init_image"].required and not fields["control_image"].required
    assert fields["prompt"].default == "a fox"
    text = f"{fields['prompt'].default} {fields['options'].default}"
    parsed = validate_options(
        spec, parse_command_text(spec, text), attachments=("init_image",), text_style=True
    )
    assert parsed == given
    again = diffusion_upload_form("img2img", values={"prompt": "mine", "options": "--seed 1"})
    assert [f.default for f in again.fields[1:]] == ["mine", "--seed 1"]
