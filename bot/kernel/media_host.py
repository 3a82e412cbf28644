"""A host for images the provider must fetch: :class:`MediaHost` keeps images users attached
(``/describe``, ``/blend``, ``/imagine`` references) for a while, in genbot's database, and the
webhook receiver serves them at ``<public_url>/media/<token>.<ext>``, because the provider does
not accept links on the chat platform's CDN (docs/provider.md, "Image tasks"). The database is
shared by every process, so whichever process the provider reaches serves the image, whoever
received it. It only exists when ``[webhook] public_url`` is set; tokens are random and expire
(``ttl``). Each user's images are also capped (``max_bytes_per_owner``): a user's new image
makes room by removing their own oldest first, so one user cannot push out everyone else's
images waiting for the provider. Each serving is counted, so genbot can tell whether the
provider fetched an image it was given (:meth:`MediaHost.unread`)."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from bot.kernel.media import ImageBytes, MediaError, inspect_image
from storage import HostedMedia, MediaCaps


@dataclass(frozen=True)
class HostedImage:
    """An image kept by :class:`MediaHost`: its bytes and MIME type."""

    data: bytes
    content_type: str


_HOSTED_NAME = re.compile(r"^[A-Za-z0-9_-]{24}\.(png|jpg|webp|gif)$")
_TYPES = {"png": "image/png", "jpg": "image/jpeg", "webp": "image/webp", "gif": "image/gif"}


class MediaHost:
    """Images served at ``<base_url>/media/<token>.<ext>`` for ``ttl`` seconds, kept in
    ``store``: at most ``max_total_bytes``, the oldest going first when more arrive, and at
    most ``max_bytes_per_owner`` of one owner's."""

    def __init__(
        self,
        base_url: str,
        store: HostedMedia,
        *,
        max_total_bytes: int = 256 * 1024 * 1024,
        max_bytes_per_owner: int = 64 * 1024 * 1024,
        ttl: float = 3600.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.store = store
        self.caps = MediaCaps(max_total_bytes, max_bytes_per_owner)
        self.ttl = ttl

    async def put_bytes(self, data: bytes) -> str:
        """Keep the image ``data`` and return its public URL; ``ValueError`` (a sentence for
        users) when it is not an image genbot reads."""
        try:
            image = inspect_image(data)
        except MediaError as error:
            raise ValueError(error.told()) from None
        return await self.put(image)

    async def put(self, image: ImageBytes, owner: str | None = None) -> str:
        """Keep ``image`` (of ``owner``, when known) and return its public URL."""
        extension = image.extension if image.extension in _TYPES else "png"
        name = f"{secrets.token_urlsafe(18)}.{extension}"
        await self.store.put(name, owner, _TYPES[extension], image.data, self.ttl, self.caps)
        return f"{self.base_url}/media/{name}"

    async def get(self, name: str) -> HostedImage | None:
        """The image called ``name`` (the last path segment of its URL), if kept and fresh;
        the fetch is counted."""
        if not _HOSTED_NAME.match(name):
            return None
        served = await self.store.serve(name)
        if served is None:
            return None
        content_type, data = served
        return HostedImage(data, content_type)

    async def sweep(self, max_age: float) -> int:
        """Remove the images kept longer than ``max_age`` seconds or than they are served
        (``ttl``); how many."""
        return await self.store.sweep(max_age)

    def name_of(self, url: str) -> str | None:
        """The name of the image ``url`` is, when it is one of this host's."""
        prefix = f"{self.base_url}/media/"
        name = url.removeprefix(prefix)
        return name if url.startswith(prefix) and _HOSTED_NAME.match(name) else None

    async def unread(self, urls: tuple[str, ...]) -> int:
        """How many of ``urls`` (this host's) were never fetched while kept."""
        names = tuple(name for url in urls if (name := self.name_of(url)) is not None)
        fetched = await self.store.fetches(names)
        return sum(1 for name in names if fetched.get(name, 0) == 0)
