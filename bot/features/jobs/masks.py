"""Vary (Region): the region a user types → a mask PNG for the inpaint endpoint.

Region syntax (case-insensitive; several regions joined with ``;``, ``+`` or ``and``):

- presets: ``left half``, ``right half``, ``top half``, ``bottom half``; ``top left``,
  ``top right``, ``bottom left``, ``bottom right`` (quarters); ``left third``, ``right third``,
  ``top third``, ``bottom third``; ``center`` (the middle half in both directions);
  ``everything``. ``upper``/``lower`` mean top/bottom, ``middle``/``centre`` mean center,
  hyphens and a leading ``the`` are ignored, and ``quarter`` may follow a corner.
- rectangles: ``x,y,w,h`` in percent of the image — top-left corner, then width and height —
  separated by commas and/or spaces, ``%`` signs allowed: ``10,10,50,50`` or ``0 50 100 50``.
  Each number 0–100, width and height above 0, and the rectangle inside the image.
- freehand outlines (what the playground's editor draws): ``polygon x1 y1 x2 y2 …`` — at least 3
  and at most :data:`MAX_POLYGON_POINTS` points in percent, the shape's inside repainted.

The mask is a greyscale PNG of the image's size: white (255) where the image may change, black
(0) where it is kept. The endpoint wants it base64-encoded (:attr:`Mask.base64`).
"""

from __future__ import annotations

import base64
import io
import math
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

from PIL import Image, ImageDraw, UnidentifiedImageError

from bot.kernel import CommandError, _

MAX_REGIONS = 10
MAX_POLYGON_POINTS = 400
MAX_MASK_SIDE = 8192


@dataclass(frozen=True)
class Region:
    """A rectangle in fractions of the image (0–1): left, top, width, height."""

    x: float
    y: float
    w: float
    h: float


@dataclass(frozen=True)
class Polygon:
    """A closed outline in fractions of the image (0–1): its corner points in order."""

    points: tuple[tuple[float, float], ...]


Shape = Region | Polygon


PRESETS: dict[str, Region] = {
    "left half": Region(0, 0, 0.5, 1),
    "right half": Region(0.5, 0, 0.5, 1),
    "top half": Region(0, 0, 1, 0.5),
    "bottom half": Region(0, 0.5, 1, 0.5),
    "top left": Region(0, 0, 0.5, 0.5),
    "top right": Region(0.5, 0, 0.5, 0.5),
    "bottom left": Region(0, 0.5, 0.5, 0.5),
    "bottom right": Region(0.5, 0.5, 0.5, 0.5),
    "left third": Region(0, 0, 1 / 3, 1),
    "right third": Region(2 / 3, 0, 1 / 3, 1),
    "top third": Region(0, 0, 1, 1 / 3),
    "bottom third": Region(0, 2 / 3, 1, 1 / 3),
    "center": Region(0.25, 0.25, 0.5, 0.5),
    "everything": Region(0, 0, 1, 1),
}
"""Named regions accepted by :func:`parse_region`."""

_SYNONYMS = {
    "upper": "top",
    "lower": "bottom",
    "middle": "center",
    "centre": "center",
    "all": "everything",
    "whole": "everything",
}
_SPLIT_RE = re.compile(r"\s*(?:;|\+|\band\b)\s*", re.IGNORECASE)


def _preset(text: str) -> Region | None:
    words = text.lower().replace("-", " ").split()
    words = [_SYNONYMS.get(word, word) for word in words if word not in ("the", "image")]
    if words and words[-1] == "quarter":
        words = words[:-1]
    return PRESETS.get(" ".join(words))


def _rectangle(text: str) -> Region:
    numbers = [n for n in re.split(r"[\s,]+", text.replace("%", " ").strip()) if n]
    if len(numbers) != 4:
        raise CommandError(
            _(
                "A region needs four numbers x,y,w,h in percent, like 10,10,50,50 (got {value}).",
                value=repr(text),
            )
        )
    try:
        x, y, w, h = (float(n) for n in numbers)
    except ValueError:
        raise CommandError(
            _("Region numbers must be plain numbers (got {value}).", value=repr(text))
        ) from None
    if not all(math.isfinite(v) and 0 <= v <= 100 for v in (x, y, w, h)):
        raise CommandError(
            _("Region numbers must be between 0 and 100 percent (got {value}).", value=repr(text))
        )
    if w == 0 or h == 0:
        raise CommandError(
            _("A region's width and height must be above 0 (got {value}).", value=repr(text))
        )
    if x + w > 100 or y + h > 100:
        raise CommandError(
            _(
                "The region {value} goes past the image's edge: x + w and y + h must be at "
                "most 100.",
                value=repr(text),
            )
        )
    return Region(x / 100, y / 100, w / 100, h / 100)


def _polygon(text: str) -> Polygon:
    numbers = [n for n in re.split(r"[\s,]+", text.replace("%", " ").strip()) if n]
    if len(numbers) % 2 or not 3 <= len(numbers) // 2 <= MAX_POLYGON_POINTS:
        raise CommandError(
            _(
                "An outline needs 3 to {most} points, each x and y in percent.",
                most=MAX_POLYGON_POINTS,
            )
        )
    try:
        values = [float(n) for n in numbers]
    except ValueError:
        raise CommandError(_("Outline points must be plain numbers.")) from None
    if not all(math.isfinite(v) and 0 <= v <= 100 for v in values):
        raise CommandError(_("Outline points must be between 0 and 100 percent."))
    pairs = zip(values[::2], values[1::2], strict=True)
    return Polygon(tuple((x / 100, y / 100) for x, y in pairs))


def parse_region(text: str) -> tuple[Shape, ...]:
    """The regions ``text`` names (see the module docstring); :class:`CommandError` otherwise."""
    parts = [part for part in _SPLIT_RE.split(text.strip()) if part]
    if not parts:
        raise CommandError(
            _(
                "Which part of the image should change? Give a preset such as 'left half', "
                "'center', 'top right', or x,y,w,h in percent."
            )
        )
    if len(parts) > MAX_REGIONS:
        raise CommandError(
            _("At most {most} regions at once (got {count}).", most=MAX_REGIONS, count=len(parts))
        )
    regions: list[Shape] = []
    for part in parts:
        preset = _preset(part)
        if part.lower().startswith("polygon"):
            regions.append(_polygon(part[len("polygon") :]))
        elif preset is not None:
            regions.append(preset)
        elif any(char.isdigit() for char in part):
            regions.append(_rectangle(part))
        else:
            raise CommandError(
                _(
                    "I don't know the region {region}. Give a preset such as 'left half', "
                    "'center', 'top right', or x,y,w,h in percent.",
                    region=repr(part),
                )
            )
    return tuple(regions)


@dataclass(frozen=True)
class Mask:
    """A mask image: PNG bytes, the same base64-encoded, and its size."""

    png: bytes
    base64: str
    width: int
    height: int


def _box(region: Region, width: int, height: int) -> tuple[int, int, int, int]:
    left = min(math.floor(region.x * width + 1e-9), width - 1)
    top = min(math.floor(region.y * height + 1e-9), height - 1)
    right = max(min(math.ceil((region.x + region.w) * width - 1e-9), width), left + 1)
    bottom = max(min(math.ceil((region.y + region.h) * height - 1e-9), height), top + 1)
    return left, top, right, bottom


def build_mask(regions: Iterable[Shape], size: tuple[int, int]) -> Mask:
    """A white-on-black mask of ``size`` (width, height) with ``regions`` white."""
    width, height = size
    if not (0 < width <= MAX_MASK_SIDE and 0 < height <= MAX_MASK_SIDE):
        raise ValueError(f"mask size must be 1..{MAX_MASK_SIDE} on each side (got {size})")
    image = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(image)
    for region in regions:
        if isinstance(region, Polygon):
            corners = [(x * width, y * height) for x, y in region.points]
            draw.polygon(corners, fill=255, outline=255)
            continue
        left, top, right, bottom = _box(region, width, height)
        draw.rectangle((left, top, right - 1, bottom - 1), fill=255)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    png = buffer.getvalue()
    return Mask(png, base64.b64encode(png).decode("ascii"), width, height)


def image_size(data: bytes) -> tuple[int, int]:
    """(width, height) of an image given as bytes; :class:`CommandError` when it is not one."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                return image.size
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise CommandError(_("That image has too many pixels for me to read.")) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        raise CommandError(_("That file is not an image I can read.")) from None
