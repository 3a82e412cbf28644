"""Images genbot hosts for the provider (``/describe``, ``/blend``, ``/imagine`` references),
kept in the database so that whichever process the provider reaches serves them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from storage.queries.base import Clock
from storage.sql.session import Database, Session

SQL_EXPIRE: Final = "DELETE FROM hosted_media WHERE expires_at <= ?"
SQL_SIZES: Final = "SELECT name, owner, size FROM hosted_media ORDER BY created_at, name"
SQL_DROP: Final = "DELETE FROM hosted_media WHERE name = ?"
SQL_PUT: Final = (
    "INSERT INTO hosted_media (name, owner, content_type, data, size, created_at, expires_at,"
    " fetches) VALUES (?, ?, ?, ?, ?, ?, ?, 0)"
)
SQL_SERVE: Final = (
    "UPDATE hosted_media SET fetches = fetches + 1 WHERE name = ? AND expires_at > ?"
    " RETURNING content_type, data"
)
SQL_FETCHES: Final = "SELECT name, fetches FROM hosted_media WHERE name IN ({})"
SQL_SWEEP: Final = "DELETE FROM hosted_media WHERE created_at <= ? OR expires_at <= ?"


@dataclass(frozen=True)
class MediaCaps:
    """How much is kept: ``total`` bytes over everyone, ``per_owner`` bytes of one owner's; a
    new image makes room by removing its owner's oldest first, then everyone's oldest."""

    total: int
    per_owner: int


@dataclass
class HostedMedia:
    """The hosted images: put, served (counted), expired."""

    db: Database
    clock: Clock

    async def put(
        self,
        name: str,
        owner: str | None,
        content_type: str,
        data: bytes,
        ttl: float,
        caps: MediaCaps,
    ) -> None:
        """Keep ``data`` as ``name`` for ``ttl`` seconds, within ``caps`` (see
        :class:`MediaCaps`); expired images go first."""
        now = self.clock()

        async def work(session: Session) -> None:
            await session.execute(SQL_EXPIRE, (now,))
            kept = await session.fetch_all(SQL_SIZES)
            if owner is not None:
                theirs = [row for row in kept if row["owner"] == owner]
                dropped = await _drop_oldest(session, theirs, caps.per_owner - len(data))
                kept = [row for row in kept if row["name"] not in dropped]
            await _drop_oldest(session, kept, caps.total - len(data))
            await session.execute(
                SQL_PUT, (name, owner, content_type, data, len(data), now, now + ttl)
            )

        await self.db.transaction(work)

    async def serve(self, name: str) -> tuple[str, bytes] | None:
        """The MIME type and bytes of ``name`` while it is kept (counting the fetch), else
        None."""
        row = await self.db.fetch_one(SQL_SERVE, (name, self.clock()), repeatable=False)
        if row is None:
            return None
        return str(row["content_type"]), bytes(row["data"])

    async def fetches(self, names: tuple[str, ...]) -> dict[str, int]:
        """How often each of ``names`` still kept was served."""
        if not names:
            return {}
        rows = await self.db.fetch_all(SQL_FETCHES.format(", ".join("?" * len(names))), names)
        return {str(row["name"]): int(row["fetches"]) for row in rows}

    async def sweep(self, max_age: float) -> int:
        """Delete the images kept longer than ``max_age`` seconds, or expired; how many."""
        now = self.clock()
        return await self.db.execute(SQL_SWEEP, (now - max_age, now), repeatable=True)


async def _drop_oldest(session: Session, rows: list[dict[str, object]], room: int) -> set[str]:
    """Delete the oldest of ``rows`` (oldest first) until they hold at most ``room`` bytes."""
    total = sum(int(str(row["size"])) for row in rows)
    dropped: set[str] = set()
    for row in rows:
        if total <= room:
            break
        await session.execute(SQL_DROP, (row["name"],))
        dropped.add(str(row["name"]))
        total -= int(str(row["size"]))
    return dropped
