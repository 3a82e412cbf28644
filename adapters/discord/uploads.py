"""Images within Discord's upload limit.

Discord refuses (413) an attachment above the channel's limit: 10 MiB by default, more in boosted
servers; each interaction says the real one (``Interaction.filesize_limit``). An image above it
is re-encoded as JPEG at falling quality, then scaled down, until it fits; one that still does
not fit is left out and the message links to it instead (its provider URL, when known).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, replace

from PIL import Image

from bot.kernel import ImageFile, MediaError, inspect_image

DEFAULT_UPLOAD_LIMIT = 10 * 1024 * 1024
QUALITIES = (90, 80, 70, 60)
SCALE_STEP = 0.75
SCALE_STEPS = 4


@dataclass(frozen=True)
class Fitted:
    """The images to upload, and those that could not be made to fit."""

    images: tuple[ImageFile, ...]
    left_out: tuple[ImageFile, ...]


def fit_images(images: Sequence[ImageFile], limit: int) -> Fitted:
    """``images`` each within ``limit`` bytes (see the module docstring)."""
    kept: list[ImageFile] = []
    left_out: list[ImageFile] = []
    for image in images:
        fitted = image if len(image.data) <= limit else recompress(image, limit)
        if fitted is None:
            left_out.append(image)
        else:
            kept.append(fitted)
    return Fitted(tuple(kept), tuple(left_out))


def recompress(image: ImageFile, limit: int) -> ImageFile | None:
    """``image`` as a JPEG of at most ``limit`` bytes, or ``None`` when it cannot be one."""
    try:
        inspect_image(image.data)
    except MediaError:
        return None
    with Image.open(io.BytesIO(image.data)) as opened:
        picture = opened.convert("RGB")
    stem = image.filename.rsplit(".", 1)[0] or "image"
    for _ in range(SCALE_STEPS + 1):
        for quality in QUALITIES:
            buffer = io.BytesIO()
            picture.save(buffer, format="JPEG", quality=quality, optimize=True)
            if buffer.tell() <= limit:
                return replace(
                    image, filename=f"{stem}.jpg", data=buffer.getvalue(), content_type="image/jpeg"
                )
        width, height = picture.size
        smaller = (max(1, int(width * SCALE_STEP)), max(1, int(height * SCALE_STEP)))
        picture = picture.resize(smaller, Image.Resampling.LANCZOS)
    return None
