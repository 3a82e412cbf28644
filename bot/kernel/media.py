"""Images genbot reads: checked before use, and downloaded within bounds.

:func:`inspect_image` is the one gate every image passes (users' attachments and uploads,
provider results): PNG, JPEG, GIF or WebP only, at most :data:`MAX_IMAGE_PIXELS` pixels (a
decompression bomb is refused from its header, before any pixel is decoded), and complete (a
truncated file, or another file behind an image's first bytes, is refused). Its errors are
sentences for users.

Provider result URLs expire, so results are downloaded and re-uploaded to the platform.
:class:`MediaFetcher` downloads over http(s) only, following at most :data:`MAX_REDIRECTS`
redirects, with a size cap (``[limits] max_upload_bytes``) and a time cap; it refuses loopback,
private and link-local addresses unless told the provider itself lives on one (the simulator).
"""

from __future__ import annotations

import asyncio
import io
import ipaddress
import logging
import socket
import warnings
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from PIL import Image, UnidentifiedImageError

from bot.kernel.events import Attachment
from bot.kernel.i18n import N_, _, format_bytes, format_number

log = logging.getLogger(__name__)

DOWNLOAD_TIMEOUT_SECONDS = 30.0
CHUNK_BYTES = 64 * 1024
MAX_REDIRECTS = 3
MAX_IMAGE_PIXELS = 40_000_000
"""Larger images are refused unread (a 4× upscale of a 2048-pixel image is 16.8 M)."""
READABLE_FORMATS = ("PNG", "JPEG", "GIF", "WEBP")
_EXTENSIONS = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp", "GIF": "gif"}
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp")


def is_image(attachment: Attachment) -> bool:
    """Whether an attachment is a picture (by its type, else its file name): what the vision
    model could look at, and what commands take as images."""
    if attachment.content_type:
        return attachment.content_type.lower().startswith("image/")
    return attachment.filename.lower().endswith(IMAGE_EXTENSIONS)


class MediaError(Exception):
    """An image could not be downloaded or read: ``str(error)`` says why in English (for logs),
    :meth:`told` in the user's language.

    ``reason`` is a catalog text (marked with ``N_``) whose ``{name}`` fields ``values`` fill.
    """

    def __init__(self, reason: str, /, **values: object) -> None:
        super().__init__(reason.format(**values) if values else reason)
        self.reason = reason
        self.values = values

    def told(self) -> str:
        """Why, in the language being spoken (a clause: "the file is empty")."""
        return _(self.reason, **self.values)


class UnreadableImage(MediaError):
    """The bytes arrived but are not an image genbot reads: trying again will not help."""


@dataclass(frozen=True)
class ImageBytes:
    """A downloaded image: its bytes, MIME type, file extension and size in pixels."""

    data: bytes
    content_type: str
    extension: str
    width: int
    height: int


def inspect_image(data: bytes, max_pixels: int = MAX_IMAGE_PIXELS) -> ImageBytes:
    """``data`` as a checked image (see the module docstring); :class:`UnreadableImage` saying
    what is wrong otherwise."""
    if not data:
        raise UnreadableImage(N_("the file is empty"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=READABLE_FORMATS) as image:
                kind = image.format or "PNG"
                width, height = image.size
                _check_pixels(width, height, max_pixels)
                _read_through(image, kind)
    except UnreadableImage:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise UnreadableImage(
            N_(
                "the image is a decompression bomb: it has too many pixels (genbot reads at "
                "most {millions} million)"
            ),
            millions=max_pixels // 1_000_000,
        ) from None
    except UnidentifiedImageError:
        raise UnreadableImage(
            N_("the file is not an image genbot can read (PNG, JPEG, GIF or WebP)")
        ) from None
    except Exception as error:
        log.debug("an image failed its check: %r", error)
        raise UnreadableImage(
            N_("the image file is truncated or damaged (or not an image behind an image's header)")
        ) from None
    extension = _EXTENSIONS[kind]
    content_type = Image.MIME.get(kind, f"image/{extension}")
    return ImageBytes(data, content_type, extension, width, height)


def _check_pixels(width: int, height: int, max_pixels: int) -> None:
    if width <= 0 or height <= 0:
        raise UnreadableImage(N_("the image has no pixels"))
    if width * height > max_pixels:
        raise UnreadableImage(
            N_(
                "the image is {width}×{height}: it has too many pixels (genbot reads at most "
                "{millions} million)"
            ),
            width=width,
            height=height,
            millions=max_pixels // 1_000_000,
        )


def _read_through(image: Image.Image, kind: str) -> None:
    """Read the whole file as cheaply as its format allows; raises when it is incomplete."""
    if kind == "PNG":
        image.verify()
        return
    if kind == "JPEG":
        width, height = image.size
        image.draft("RGB", (max(1, width // 8), max(1, height // 8)))
    image.load()


def is_private_address(host: str) -> bool:
    """Whether ``host`` (an IP address) is loopback, private, link-local or otherwise not a
    public internet address."""
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    return not address.is_global


def provider_is_private(base_url: str) -> bool:
    """Whether ``[api] base_url`` names a loopback or private address (the simulator): then
    result URLs may point there too."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "localhost" or is_private_address(host)


class PublicResolver(AbstractResolver):
    """Resolves names like aiohttp does, then drops every non-public address; a name with
    nothing else left fails to connect (so a redirect cannot reach the local network)."""

    def __init__(self) -> None:
        self._resolver = DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._resolver.resolve(host, port, family)
        public = [entry for entry in found if not is_private_address(entry["host"])]
        if not public:
            raise OSError(f"{host} resolves to a private address only")
        return public

    async def close(self) -> None:
        await self._resolver.close()


class MediaFetcher:
    """Downloads images over HTTP (see the module docstring), at most ``max_bytes`` each, within
    ``timeout`` seconds; ``allow_private`` admits loopback and private addresses."""

    def __init__(
        self,
        max_bytes: int,
        timeout: float = DOWNLOAD_TIMEOUT_SECONDS,
        *,
        allow_private: bool = False,
    ) -> None:
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.allow_private = allow_private
        self._session: aiohttp.ClientSession | None = None

    async def fetch(self, url: str) -> ImageBytes:
        """The image at ``url``; :class:`MediaError` on any failure (address, status, size,
        time, redirects), :class:`UnreadableImage` when the bytes are not a readable image."""
        try:
            async with asyncio.timeout(self.timeout):
                data = await self._download(url)
        except TimeoutError:
            raise MediaError(
                N_("the image took longer than {seconds} s to download"),
                seconds=format_number(self.timeout, grouping=False),
            ) from None
        except aiohttp.ClientError as error:
            raise MediaError(
                # Translators: {problem} is the technical error (ClientConnectorError…).
                N_("the image could not be downloaded ({problem})"),
                problem=type(error).__name__,
            ) from None
        except OSError as error:
            raise MediaError(
                N_("the image could not be downloaded ({problem})"), problem=str(error)
            ) from None
        return inspect_image(data)

    async def _download(self, url: str) -> bytes:
        session = self._open()
        for __ in range(MAX_REDIRECTS + 1):
            self._check_address(url)
            async with session.get(url, allow_redirects=False) as response:
                location = response.headers.get("Location")
                if response.status in _REDIRECTS and location:
                    url = urljoin(url, location)
                    continue
                if response.status != 200:
                    raise MediaError(
                        N_("the image link answered HTTP {status}"), status=response.status
                    )
                declared = response.content_length
                if declared is not None and declared > self.max_bytes:
                    raise self._too_big(declared)
                return await self._read(response)
        raise MediaError(N_("the image link redirected more than {most} times"), most=MAX_REDIRECTS)

    def _check_address(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise MediaError(N_("the image link is not an http(s) address"))
        if not self.allow_private and (
            parts.hostname.lower() == "localhost" or is_private_address(parts.hostname)
        ):
            raise MediaError(N_("the image link points to a private address"))

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            options: dict[str, Any] = {}
            if not self.allow_private:
                options["connector"] = aiohttp.TCPConnector(resolver=PublicResolver())
            self._session = aiohttp.ClientSession(**options)
        return self._session

    async def _read(self, response: aiohttp.ClientResponse) -> bytes:
        buffer = bytearray()
        async for chunk in response.content.iter_chunked(CHUNK_BYTES):
            buffer += chunk
            if len(buffer) > self.max_bytes:
                raise self._too_big(len(buffer))
        return bytes(buffer)

    def _too_big(self, size: int) -> MediaError:
        return MediaError(
            N_("the image is larger than {most} ({size} or more)"),
            most=format_bytes(self.max_bytes),
            size=format_bytes(size),
        )

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
