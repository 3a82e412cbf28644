"""A host for images the provider must fetch: :class:`MediaHost` keeps images users attached
(``/describe``, ``/blend``) for a while, on disk beside the database, and the webhook receiver
serves them at ``<public_url>/media/<token>.<ext>``, because the provider does not accept links on
the chat platform's CDN (docs/provider.md, "Image tasks"). It only exists when ``[webhook]
public_url`` is set; tokens are random and expire (``ttl``). Each user's images are also capped
(``max_bytes_per_owner``): a user's new image makes room by removing their own oldest first, so
one user cannot push out everyone else's images waiting for the provider."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.kernel.media import ImageBytes, MediaError, inspect_image
from storage.files import PRIVATE_FILE, private_folder


@dataclass(frozen=True)
class HostedImage:
    """An image kept by :class:`MediaHost`: the file to serve and its MIME type."""

    path: Path
    content_type: str


PARTIAL_FILE_SECONDS = 60.0
"""A file still being written this long after it was begun was left by a crash."""
_HOSTED_NAME = re.compile(r"^[A-Za-z0-9_-]{24}\.(png|jpg|webp|gif)$")
_TYPES = {"png": "image/png", "jpg": "image/jpeg", "webp": "image/webp", "gif": "image/gif"}


def media_folder(database: Path) -> Path:
    """Where re-hosted images are kept: beside genbot's database
    (``genbot.db`` → ``genbot.media/``)."""
    return database.with_name(f"{database.stem}.media")


class MediaHost:
    """Images served at ``<base_url>/media/<token>.<ext>`` for ``ttl`` seconds.

    They are files in ``folder`` (``0700``, each file ``0600``), so they survive a restart;
    at most ``max_total_bytes`` are kept, the oldest going first when more arrive, and at most
    ``max_bytes_per_owner`` of one owner's (an image's owner is known to the process that kept
    it: files kept before a restart count only towards the total).
    """

    def __init__(
        self,
        base_url: str,
        folder: Path,
        *,
        max_total_bytes: int = 256 * 1024 * 1024,
        max_bytes_per_owner: int = 64 * 1024 * 1024,
        ttl: float = 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.folder = folder
        self.max_total_bytes = max_total_bytes
        self.max_bytes_per_owner = max_bytes_per_owner
        self.ttl = ttl
        self._clock = clock
        self._owners: dict[str, str] = {}
        self._writing = threading.Lock()

    async def put_bytes(self, data: bytes) -> str:
        """Keep the image ``data`` and return its public URL; ``ValueError`` (a sentence for
        users) when it is not an image genbot reads."""
        try:
            image = inspect_image(data)
        except MediaError as error:
            raise ValueError(str(error)) from None
        return await self.put(image)

    async def put(self, image: ImageBytes, owner: str | None = None) -> str:
        """Keep ``image`` (of ``owner``, when known) and return its public URL."""
        extension = image.extension if image.extension in _TYPES else "png"
        name = f"{secrets.token_urlsafe(18)}.{extension}"
        await asyncio.to_thread(self._write, name, image.data, owner)
        return f"{self.base_url}/media/{name}"

    def get(self, name: str) -> HostedImage | None:
        """The image called ``name`` (the last path segment of its URL), if kept and fresh."""
        if not _HOSTED_NAME.match(name):
            return None
        path = self.folder / name
        try:
            written = path.stat().st_mtime
        except OSError:
            return None
        if written + self.ttl <= self._clock():
            return None
        return HostedImage(path, _TYPES[name.rsplit(".", 1)[1]])

    def sweep(self, max_age: float) -> int:
        """Remove the images kept longer than ``max_age`` seconds or than they are served
        (``ttl``); how many."""
        now, oldest = self._clock(), min(max_age, self.ttl)
        removed = 0
        with self._writing:
            for path in self.folder.glob("*.*"):
                with contextlib.suppress(OSError):
                    if _HOSTED_NAME.match(path.name) and path.stat().st_mtime + oldest <= now:
                        path.unlink()
                        self._owners.pop(path.name, None)
                        removed += 1
        return removed

    def _write(self, name: str, data: bytes, owner: str | None) -> None:
        with self._writing:
            private_folder(self.folder)
            self._make_room(len(data), owner)
            partial = self.folder / f".{name}.partial"
            descriptor = os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE)
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
            os.replace(partial, self.folder / name)
            if owner is not None:
                self._owners[name] = owner

    def _make_room(self, incoming: int, owner: str | None) -> None:
        now = self._clock()
        kept: list[tuple[float, int, Path]] = []
        for path in self.folder.iterdir():
            try:
                info = path.stat()
            except OSError:
                continue
            partial = path.name.startswith(".")
            if info.st_mtime + (PARTIAL_FILE_SECONDS if partial else self.ttl) <= now:
                path.unlink(missing_ok=True)
            elif not partial:
                kept.append((info.st_mtime, info.st_size, path))
        kept.sort()
        self._owners = {p.name: self._owners[p.name] for _, _, p in kept if p.name in self._owners}
        if owner is not None:
            theirs = [entry for entry in kept if self._owners.get(entry[2].name) == owner]
            self._remove_oldest(theirs, self.max_bytes_per_owner - incoming)
            kept = [entry for entry in kept if entry[2].exists()]
        self._remove_oldest(kept, self.max_total_bytes - incoming)

    def _remove_oldest(self, files: list[tuple[float, int, Path]], room: int) -> None:
        """Remove the oldest of ``files`` (oldest first) until they hold at most ``room``."""
        total = sum(size for _, size, _ in files)
        for _, size, path in files:
            if total <= room:
                break
            path.unlink(missing_ok=True)
            self._owners.pop(path.name, None)
            total -= size
