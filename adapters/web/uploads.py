"""Files kept for one user a while — their pending uploads; in a second cache, the files genbot
hands them (an export) — bounded: at most ``max_bytes`` over everyone (those kept and those
still arriving), each kept at most ``ttl`` seconds, and per user the latest
``max_per_user``. A file that does not fit is refused (:class:`UploadCacheFull`) rather
than pushing others out."""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from adapters.web.messages import StoredFile, safe_filename
from bot.kernel import _, format_bytes

DEFAULT_TTL = 3600.0


class UploadCacheFull(Exception):
    """No room for an upload now; ``str(error)`` is a sentence for the user."""


@dataclass
class _Kept:
    file: StoredFile
    expires_at: float
    kept_at: float
    """When it was kept, by the ``clock`` given."""


class UploadCache:
    """See the module docstring."""

    def __init__(
        self,
        max_bytes: int,
        *,
        ttl: float = DEFAULT_TTL,
        max_per_user: int = 20,
        monotonic: Callable[[], float] = time.monotonic,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_bytes = max_bytes
        self.ttl = ttl
        self.max_per_user = max_per_user
        self._monotonic = monotonic
        self._clock = clock
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._kept_bytes = 0
        self._arriving = 0

    @property
    def used_bytes(self) -> int:
        """Bytes kept plus bytes reserved for uploads still arriving."""
        return self._kept_bytes + self._arriving

    @contextmanager
    def reserve(self, size: int) -> Iterator[None]:
        """Hold ``size`` bytes of room while an upload arrives; :class:`UploadCacheFull` at
        once when there is not that much room."""
        self._expire()
        if self.used_bytes + size > self.max_bytes:
            raise UploadCacheFull(
                _(
                    "The playground is holding as many uploads as it may right now "
                    "({size} over everyone); send or drop the images you uploaded, or try "
                    "again in a few minutes.",
                    size=format_bytes(self.max_bytes),
                )
            )
        self._arriving += size
        try:
            yield
        finally:
            self._arriving -= size

    def add(
        self, owner: str, filename: str, data: bytes, content_type: str
    ) -> tuple[str, StoredFile]:
        """Keep an upload (its room reserved with :meth:`reserve`); its id and stored form. The
        owner's oldest uploads go beyond ``max_per_user``."""
        upload_id = secrets.token_urlsafe(12)
        stored = StoredFile(safe_filename(filename), data, content_type, owner)
        self._kept[upload_id] = _Kept(stored, self._monotonic() + self.ttl, self._clock())
        self._kept_bytes += stored.size
        mine = [key for key, kept in self._kept.items() if kept.file.owner == owner]
        for key in mine[: max(0, len(mine) - self.max_per_user)]:
            self._drop(key)
        return upload_id, stored

    def get(self, upload_id: str, owner: str) -> StoredFile | None:
        """``owner``'s upload ``upload_id``, if it is still kept."""
        self._expire()
        kept = self._kept.get(upload_id)
        return kept.file if kept is not None and kept.file.owner == owner else None

    def count(self) -> int:
        self._expire()
        return len(self._kept)

    def owned_by(self, owner: str) -> int:
        """How many files are kept for ``owner``."""
        self._expire()
        return sum(1 for kept in self._kept.values() if kept.file.owner == owner)

    def owners(self) -> set[str]:
        """Whom files are kept for."""
        self._expire()
        return {kept.file.owner for kept in self._kept.values()}

    def forget(self, owner: str, kept_before: float | None = None) -> int:
        """Drop every file kept for ``owner`` (``/forget-me``; with ``kept_before``, by the
        ``clock`` given, only those kept before: a forget learnt of late); how many went.
        Uploads still arriving are theirs to add: one added later is a file the user sent
        after."""
        self._expire()
        mine = [
            key
            for key, kept in self._kept.items()
            if kept.file.owner == owner and (kept_before is None or kept.kept_at < kept_before)
        ]
        for key in mine:
            self._drop(key)
        return len(mine)

    def take(self, upload_ids: list[str], owner: str) -> list[StoredFile]:
        """Remove and return ``owner``'s uploads; ``KeyError`` (naming the id) if one is gone."""
        unique = list(dict.fromkeys(upload_ids))
        for upload_id in unique:
            if self.get(upload_id, owner) is None:
                raise KeyError(upload_id)
        return [self._drop(upload_id) for upload_id in unique]

    def _drop(self, upload_id: str) -> StoredFile:
        kept = self._kept.pop(upload_id)
        self._kept_bytes -= kept.file.size
        return kept.file

    def _expire(self) -> None:
        now = self._monotonic()
        while self._kept:
            upload_id, oldest = next(iter(self._kept.items()))
            if oldest.expires_at > now:
                break
            self._drop(upload_id)
