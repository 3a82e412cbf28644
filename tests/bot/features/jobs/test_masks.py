from __future__ import annotations

import base64
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from bot.features.jobs.masks import (
    MAX_REGIONS,
    PRESETS,
    Mask,
    Region,
    build_mask,
    image_size,
    parse_region,
)
from bot.kernel import CommandError


def mask_for(region_text: str, size: tuple[int, int]) -> Mask:
    """:func:`parse_region` then :func:`build_mask`."""
    return build_mask(parse_region(region_text), size)


def open_mask(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    image.load()
    return image


def white_pixels(image: Image.Image) -> int:
    return image.histogram()[255]


@pytest.mark.parametrize(
    ("text", "preset"),
    [
        ("left half", "left half"),
        ("Upper-Left quarter", "top left"),
        ("the centre", "center"),
        ("middle", "center"),
        ("LOWER RIGHT", "bottom right"),
        ("bottom third", "bottom third"),
        ("all", "everything"),
        ("whole image", "everything"),
    ],
)
def test_presets_and_their_spellings(text: str, preset: str) -> None:
    assert parse_region(text) == (PRESETS[preset],)


def test_rectangles_in_percent() -> None:
    expected = (Region(0.1, 0.1, 0.5, 0.5),)
    assert parse_region("10,10,50,50") == expected
    assert parse_region("10 10 50 50") == expected
    assert parse_region("10%, 10%, 50%, 50%") == expected
    assert parse_region("0 50 100 50") == (Region(0, 0.5, 1, 0.5),)
    assert parse_region("12.5,0,25,100") == (Region(0.125, 0, 0.25, 1),)


def test_several_regions_at_once() -> None:
    assert parse_region("left half; top right") == (PRESETS["left half"], PRESETS["top right"])
    assert parse_region("center + 0,0,10,10") == (PRESETS["center"], Region(0, 0, 0.1, 0.1))
    assert parse_region("left third and right third") == (
        PRESETS["left third"],
        PRESETS["right third"],
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Which part of the image"),
        ("somewhere nice", "I don't know the region 'somewhere nice'"),
        ("10,10,50", "four numbers x,y,w,h"),
        ("60,0,50,50", "goes past the image's edge"),
        ("0,0,0,10", "width and height must be above 0"),
        ("-5,0,10,10", "between 0 and 100"),
        ("0,0,150,10", "between 0 and 100"),
        ("1.2.3,0,1,1", "plain numbers"),
    ],
)
def test_bad_regions_are_explained(text: str, message: str) -> None:
    with pytest.raises(CommandError, match=message.replace("(", r"\(")):
        parse_region(text)


def test_too_many_regions() -> None:
    with pytest.raises(CommandError, match=f"At most {MAX_REGIONS}"):
        parse_region(";".join(["center"] * (MAX_REGIONS + 1)))


def test_the_mask_is_white_where_the_image_changes_and_black_elsewhere() -> None:
    mask = mask_for("left half", (1024, 768))
    image = open_mask(mask.png)
    assert (mask.width, mask.height) == image.size == (1024, 768)
    assert image.mode == "L" and mask.png.startswith(b"\x89PNG")
    assert image.getpixel((0, 0)) == 255 and image.getpixel((511, 767)) == 255
    assert image.getpixel((512, 0)) == 0 and image.getpixel((1023, 767)) == 0
    assert white_pixels(image) == 512 * 768
    histogram = image.histogram()
    assert histogram[0] + histogram[255] == 1024 * 768
    assert base64.b64decode(mask.base64) == mask.png


def test_regions_add_up_and_odd_sizes_round_outwards() -> None:
    image = open_mask(mask_for("top left; bottom right", (100, 100)).png)
    assert white_pixels(image) == 2 * 50 * 50
    image = open_mask(mask_for("left half", (101, 51)).png)
    assert white_pixels(image) == 51 * 51
    tiny = open_mask(mask_for("0,0,0.1,0.1", (64, 64)).png)
    assert white_pixels(tiny) == 1


@settings(max_examples=80, deadline=None)
@given(
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(1, 100),
    st.integers(1, 100),
    st.integers(1, 300),
    st.integers(1, 300),
)
def test_a_rectangle_covers_its_area_and_not_much_more(
    x: int, y: int, w: int, h: int, width: int, height: int
) -> None:
    w, h = min(w, 100 - x), min(h, 100 - y)
    image = open_mask(build_mask(parse_region(f"{x},{y},{w},{h}"), (width, height)).png)
    box = image.getbbox()
    assert box is not None
    left, top, right, bottom = box
    assert left <= x * width / 100 < left + 1
    assert top <= y * height / 100 < top + 1
    assert right - 1 < (x + w) * width / 100 <= right or right - left == 1
    assert bottom - 1 < (y + h) * height / 100 <= bottom or bottom - top == 1
    assert white_pixels(image) == (right - left) * (bottom - top)


def test_image_size_reads_an_image_and_refuses_other_bytes() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (320, 200)).save(buffer, format="PNG")
    assert image_size(buffer.getvalue()) == (320, 200)
    with pytest.raises(CommandError, match="not an image"):
        image_size(b"hello")


def test_mask_sizes_are_bounded() -> None:
    with pytest.raises(ValueError, match="mask size"):
        build_mask((PRESETS["center"],), (0, 10))
