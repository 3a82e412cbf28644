"""Bounded image downloads, and a small in-memory host for images the provider must fetch.

Provider result URLs expire, so results are downloaded and re-uploaded to the platform.
:class:`MediaFetcher` downloads with a size cap (``[limits] max_upload_bytes``) and a time cap,
and checks that the bytes are an image it can read.

:class:`MediaHost` keeps images users attached (``/describe``, ``/blend``) for a while and
serves them at ``<public_url>/media/<token>.<ext>`` through the webhook receiver, because the
provider does not accept links on the chat platform's CDN (spec 4.2). It only exists when
``[webhook] public_url`` is set; tokens are random and expire (see ``MediaHost.ttl``).
"""

from __future__ import annotations

import asyncio
import io
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass

import aiohttp
from PIL import Image, UnidentifiedImageError

DOWNLOAD_TIMEOUT_SECONDS = 30.0
CHUNK_BYTES = 64 * 1024
_EXTENSIONS = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp", "GIF": "gif"}


class MediaError(Exception):
    """An image could not be downloaded or read; ``str(error)`` is a sentence for users."""


@dataclass(frozen=True)
class ImageBytes:
    """A downloaded image: its bytes, MIME type, file extension and size in pixels."""

    data: bytes
    content_type: str
    extension: str
    width: int
    height: int


def inspect_image(data: bytes) -> ImageBytes:
    """Identify ``data`` as an image; :class:`MediaError` when it is not one."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            kind = image.format or "PNG"
            width, height = image.size
    except (UnidentifiedImageError, OSError):
        raise MediaError("the file is not an image genbot can read") from None
    extension = _EXTENSIONS.get(kind, kind.lower())
    content_type = Image.MIME.get(kind, f"image/{extension}")
    return ImageBytes(data, content_type, extension, width, height)


class MediaFetcher:
    """Downloads images over HTTP, at most ``max_bytes`` each, within ``timeout`` seconds."""

    def __init__(self, max_bytes: int, timeout: float = DOWNLOAD_TIMEOUT_SECONDS) -> None:
        self.max_bytes = max_bytes
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    async def fetch(self, url: str) -> ImageBytes:
        """The image at ``url``; :class:`MediaError` on any failure (status, size, time)."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        try:
            async with asyncio.timeout(self.timeout):
                async with self._session.get(url) as response:
                    if response.status != 200:
                        raise MediaError(f"the image link answered HTTP {response.status}")
                    declared = response.content_length
                    if declared is not None and declared > self.max_bytes:
                        raise MediaError(self._too_big(declared))
                    data = await self._read(response)
        except TimeoutError:
            raise MediaError(f"the image took longer than {self.timeout:g} s to download") from None
        except aiohttp.ClientError as error:
            raise MediaError(
                f"the image could not be downloaded ({type(error).__name__})"
            ) from None
        return inspect_image(data)

    async def _read(self, response: aiohttp.ClientResponse) -> bytes:
        buffer = bytearray()
        async for chunk in response.content.iter_chunked(CHUNK_BYTES):
            buffer += chunk
            if len(buffer) > self.max_bytes:
                raise MediaError(self._too_big(len(buffer)))
        return bytes(buffer)

    def _too_big(self, size: int) -> str:
        return f"the image is larger than {self.max_bytes // 1024} KiB ({size // 1024} KiB or more)"

    async def start(self) -> None:
        """Nothing to do: the session opens on first use (a service of the core)."""

    async def stop(self) -> None:
        """Close the HTTP session (a service of the core)."""
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None


@dataclass(frozen=True)
class HostedImage:
    """An image kept by :class:`MediaHost`."""

    data: bytes
    content_type: str
    expires_at: float


class MediaHost:
    """Images served at ``<base_url>/media/<token>.<ext>`` until they expire.

    At most ``max_total_bytes`` are kept; the oldest images go first when more arrive.
    """

    ttl: float = 3600.0

    def __init__(self, base_url: str, *, max_total_bytes: int = 64 * 1024 * 1024) -> None:
        self.base_url = base_url.rstrip("/")
        self.max_total_bytes = max_total_bytes
        self._images: OrderedDict[str, HostedImage] = OrderedDict()
        self._total = 0

    def put(self, image: ImageBytes) -> str:
        """Keep ``image`` and return its public URL."""
        self._expire()
        name = f"{secrets.token_urlsafe(18)}.{image.extension}"
        hosted = HostedImage(image.data, image.content_type, time.monotonic() + self.ttl)
        self._images[name] = hosted
        self._total += len(image.data)
        while self._total > self.max_total_bytes and len(self._images) > 1:
            _, dropped = self._images.popitem(last=False)
            self._total -= len(dropped.data)
        return f"{self.base_url}/media/{name}"

    def get(self, name: str) -> HostedImage | None:
        """The image called ``name`` (the last path segment of its URL), if kept."""
        self._expire()
        return self._images.get(name)

    def _expire(self) -> None:
        now = time.monotonic()
        while self._images:
            name, oldest = next(iter(self._images.items()))
            if oldest.expires_at > now:
                break
            del self._images[name]
            self._total -= len(oldest.data)
