"""Deterministic PNG pictures for simulated results (served by :mod:`simulator.image_routes`).

A picture is described by an :class:`ImageSpec` (pure data, kept in ``state.images``) and drawn
on request with Pillow. The palette comes from a hash of the prompt, so different prompts look
different; shapes come from a seeded generator, so the same seed gives the same bytes. An upscale
draws its parent's cell again, larger; outpaint and pan draw the parent inside a wider frame;
inpaint paints a patch over the parent.
"""

from __future__ import annotations

import colorsys
import functools
import hashlib
import io
import math
import random
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

Box = tuple[float, float, float, float]
FULL: Box = (0.0, 0.0, 1.0, 1.0)
GRID_CELL_LONG_SIDE = 256
MAX_DRAWN_RATIO = 4.0


@dataclass(frozen=True)
class CellArt:
    """What one picture shows: fresh art from ``(prompt, art_seed)``, or ``inner`` art drawn
    inside ``frame`` (outpaint, pan) or under a patch (``patch``, inpaint)."""

    prompt: str
    art_seed: int
    jitter: float = 0.0
    jitter_seed: int = 0
    inner: CellArt | None = None
    frame: Box = FULL
    patch: bool = False
    references: int = 0
    """How many reference images the prompt had (shown in a corner)."""


@dataclass(frozen=True)
class ImageSpec:
    """A whole image: one cell (``single``) or four cells in a 2×2 grid."""

    width: int
    height: int
    cells: tuple[CellArt, ...]

    @property
    def is_grid(self) -> bool:
        return len(self.cells) == 4


@dataclass(frozen=True)
class StoredImage:
    """An image the simulator serves from ``ready_at`` until ``expires_at`` (never if None)."""

    spec: ImageSpec
    ready_at: float
    expires_at: float | None = None


def cell_size(aspect: tuple[int, int], long_side: int) -> tuple[int, int]:
    """Pixel size of a picture of ``aspect`` whose longer side is ``long_side``."""
    aw, ah = aspect
    ratio = min(max(aw / ah, 1 / MAX_DRAWN_RATIO), MAX_DRAWN_RATIO)
    if ratio >= 1:
        return long_side, max(16, round(long_side / ratio))
    return max(16, round(long_side * ratio)), long_side


def grid_spec(aspect: tuple[int, int], cells: tuple[CellArt, ...]) -> ImageSpec:
    """A 2×2 grid of ``cells`` (each at most 256 px on its longer side)."""
    width, height = cell_size(aspect, GRID_CELL_LONG_SIDE)
    return ImageSpec(width * 2, height * 2, cells)


def single_spec(aspect: tuple[int, int], art: CellArt, long_side: int) -> ImageSpec:
    """One picture of ``art``."""
    width, height = cell_size(aspect, long_side)
    return ImageSpec(width, height, (art,))


def prompt_words(prompt: str, count: int = 3) -> str:
    """The first ``count`` words of a prompt, without ``--flags`` and their values."""
    words: list[str] = []
    skip_next = False
    for word in prompt.split():
        if word.startswith("--"):
            skip_next = True
            continue
        if skip_next:
            skip_next = False
            continue
        words.append(word)
    return " ".join(words[:count])[:28]


def palette(prompt: str) -> list[tuple[int, int, int]]:
    """Four colours derived from the prompt's words."""
    digest = hashlib.sha256(prompt_words(prompt, 12).lower().encode()).digest()
    hue = digest[0] / 255
    lightness = 0.35 + digest[1] / 255 * 0.25
    offsets = (0.0, 0.09 + digest[2] / 2550, 0.5, 0.58)
    colors = []
    for offset in offsets:
        red, green, blue = colorsys.hls_to_rgb((hue + offset) % 1.0, lightness, 0.65)
        colors.append((int(red * 255), int(green * 255), int(blue * 255)))
    return colors


@functools.lru_cache(maxsize=16)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _gradient(
    draw: ImageDraw.ImageDraw, size: tuple[int, int], top: tuple[int, ...], bottom: tuple[int, ...]
) -> None:
    width, height = size
    for row in range(height):
        mix = row / height
        color = tuple(int(a + (b - a) * mix) for a, b in zip(top, bottom, strict=True))
        draw.line([(0, row), (width - 1, row)], fill=color)


def _draw_fresh(
    draw: ImageDraw.ImageDraw,
    size: tuple[int, int],
    art: CellArt,
    colors: list[tuple[int, int, int]],
) -> None:
    width, height = size
    shapes = random.Random(art.art_seed)
    jitter = random.Random(art.jitter_seed)
    for _ in range(3 + shapes.randint(0, 3)):
        kind = shapes.choice(("ellipse", "rectangle", "triangle"))
        cx, cy = shapes.uniform(0.15, 0.85), shapes.uniform(0.15, 0.85)
        radius = shapes.uniform(0.08, 0.28)
        color = shapes.choice(colors[2:] + colors[:1])
        if art.jitter:
            cx += jitter.uniform(-art.jitter, art.jitter)
            cy += jitter.uniform(-art.jitter, art.jitter)
            radius *= 1 + jitter.uniform(-art.jitter, art.jitter)
        px, py, rx, ry = cx * width, cy * height, radius * width, radius * height
        if kind == "ellipse":
            draw.ellipse([px - rx, py - ry, px + rx, py + ry], fill=color, outline=(20, 20, 20))
        elif kind == "rectangle":
            draw.rectangle([px - rx, py - ry, px + rx, py + ry], fill=color, outline=(20, 20, 20))
        else:
            draw.polygon([(px, py - ry), (px + rx, py + ry), (px - rx, py + ry)], fill=color)


def render_art(art: CellArt, size: tuple[int, int]) -> Image.Image:
    """One picture of ``art`` at ``size`` (shapes are clipped to it)."""
    width, height = max(1, size[0]), max(1, size[1])
    image = Image.new("RGB", (width, height))
    draw = ImageDraw.Draw(image)
    colors = palette(art.prompt)
    if art.inner is not None and art.patch:
        image.paste(render_art(art.inner, (width, height)))
        spot = random.Random(art.art_seed)
        cx, cy, r = spot.uniform(0.3, 0.7), spot.uniform(0.3, 0.7), spot.uniform(0.12, 0.2)
        draw.ellipse(
            [(cx - r) * width, (cy - r) * height, (cx + r) * width, (cy + r) * height],
            fill=colors[3],
            outline=(255, 255, 255),
            width=2,
        )
        return image
    if art.inner is None:
        _gradient(draw, (width, height), colors[0], colors[1])
        _draw_fresh(draw, (width, height), art, colors)
        return image
    _gradient(draw, (width, height), colors[1], colors[3])
    _draw_fresh(draw, (width, height), art, colors)
    fx0, fy0, fx1, fy1 = art.frame
    left, top = math.floor(fx0 * width), math.floor(fy0 * height)
    right, bottom = math.ceil(fx1 * width), math.ceil(fy1 * height)
    image.paste(render_art(art.inner, (right - left, bottom - top)), (left, top))
    draw.rectangle([left, top, right - 1, bottom - 1], outline=(255, 255, 255))
    return image


def _label(draw: ImageDraw.ImageDraw, size: tuple[int, int], text: str, corner: str) -> None:
    width, height = size
    font_size = max(9, min(width, height) // 10)
    if corner == "right":
        position = (max(4, width - font_size * len(text) * 2 // 3 - 6), 3)
    else:
        position = (4, 3) if corner == "top" else (4, height - font_size - 6)
    draw.text(
        position,
        text,
        font=_font(font_size),
        fill=(255, 255, 255),
        stroke_width=2,
        stroke_fill=(0, 0, 0),
    )


@functools.lru_cache(maxsize=128)
def render_png(spec: ImageSpec) -> bytes:
    """The PNG bytes of ``spec`` (deterministic)."""
    image = Image.new("RGB", (spec.width, spec.height))
    columns = 2 if spec.is_grid else 1
    cell = (spec.width // columns, spec.height // columns)
    for position, art in enumerate(spec.cells):
        picture = render_art(art, cell)
        draw = ImageDraw.Draw(picture)
        _label(draw, cell, prompt_words(art.prompt), "bottom")
        if spec.is_grid:
            _label(draw, cell, str(position + 1), "top")
        if art.references:
            _label(draw, cell, f"{art.references} ref", "right")
        image.paste(picture, ((position % columns) * cell[0], (position // columns) * cell[1]))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


IMAGE_PATHS = ("images", "host", "permanent", "diffusion")


def image_url(base_url: str, area: str, image_id: str) -> str:
    """Where the simulator serves ``image_id`` (``area`` is one of :data:`IMAGE_PATHS`)."""
    return f"{base_url}/{area}/{image_id}.png"
