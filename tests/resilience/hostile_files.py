"""Hostile image files, made in the test: a genuine decompression bomb, a truncated PNG, HTML
behind a GIF's magic bytes, and a real image too large in bytes."""

from __future__ import annotations

import io
import random
import struct
import zlib

from PIL import Image


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def bomb_png(width: int = 20_000, height: int = 20_000) -> bytes:
    """A valid 1-bit PNG of ``width``×``height`` black pixels: a few dozen KB that decode to
    ``width × height`` pixels (400 million by default)."""
    row = b"\0" * (1 + (width + 7) // 8)
    packer = zlib.compressobj(9)
    compressed = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", compressed)
        + _chunk(b"IEND", b"")
    )


def noise_png(width: int, height: int, seed: int = 0) -> bytes:
    """An RGB PNG of random pixels: it does not compress, so its size is about 3 × pixels."""
    rng = random.Random(seed)
    image = Image.frombytes("RGB", (width, height), rng.randbytes(width * height * 3))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def truncated_png() -> bytes:
    """The first two thirds of a real PNG."""
    whole = noise_png(64, 64, seed=1)
    return whole[: len(whole) * 2 // 3]


def html_gif() -> bytes:
    """An HTML page behind a GIF's magic bytes."""
    return b"GIF89a<html><body><script>alert(document.cookie)</script></body></html>"


def damaged_jpeg() -> bytes:
    """A real JPEG whose middle is overwritten."""
    buffer = io.BytesIO()
    Image.frombytes("RGB", (64, 64), random.Random(2).randbytes(64 * 64 * 3)).save(
        buffer, format="JPEG"
    )
    data = bytearray(buffer.getvalue())
    return bytes(data[: len(data) // 2])
