"""``genbot status``: the cluster as its database sees it — the processes (live or gone, with
their platforms, shards and lease counts) and the unfinished jobs by state and owner."""

from __future__ import annotations

import time
from collections.abc import Callable

from genbot.settings import Settings
from storage.inspection import Inspection, inspect_postgres, inspect_sqlite
from storage.records.jobs import ProcessStatus


async def inspect(settings: Settings, clock: Callable[[], float] = time.time) -> Inspection:
    """Look at the configured database (read-only); :class:`storage.StorageError` if not.
    ``clock`` (this host's wall clock) judges the processes on SQLite only: PostgreSQL's are
    judged on the server's clock, the one they stamp with."""
    lease = settings.storage.lease_seconds
    url = settings.storage.postgres_url
    if url is not None:
        return await inspect_postgres(url, lease_seconds=lease)
    return await inspect_sqlite(settings.storage.path, lease_seconds=lease, clock=clock)


def schema_state(found: Inspection) -> tuple[bool, str]:
    """Whether this genbot can run on the database, and its schema version in words."""
    if found.schema_version > found.latest_version:
        return False, (
            f"schema version {found.schema_version} is newer than this genbot's "
            f"({found.latest_version}): upgrade genbot"
        )
    if found.schema_version == 0:
        return True, "empty: genbot run creates the schema"
    if found.schema_version < found.latest_version:
        return True, (
            f"schema version {found.schema_version}: genbot run migrates it to "
            f"{found.latest_version}"
        )
    return True, f"schema version {found.schema_version} (up to date)"


def describe_process(process: ProcessStatus, now: float) -> str:
    """One process in one line, as seen at ``now`` (:attr:`Inspection.now`)."""
    parts = [", ".join(process.platforms) or "no adapters"]
    if process.shards:
        parts.append(f"shards {process.shards}")
    parts.append(f"{process.leases} lease{'s' if process.leases != 1 else ''}")
    ago = max(0.0, now - process.seen_at)
    state = f"seen {ago:.0f} s ago" if process.live else f"gone, last seen {ago:.0f} s ago"
    return f"{process.id} (pid {process.pid} on {process.host}; {'; '.join(parts)}; {state})"


def format_status(found: Inspection) -> str:
    """The report ``genbot status`` prints."""
    _, schema = schema_state(found)
    lines = [f"storage: {found.server} at {found.where}, {schema}"]
    lines.append(f"processes: {len(found.live)} live, {len(found.processes)} known")
    lines += [f"  {describe_process(process, found.now)}" for process in found.processes]
    total = sum(count for _, _, count in found.jobs)
    lines.append(f"unfinished jobs: {total}")
    width = max((len(status) for status, _, _ in found.jobs), default=0)
    for status, owner, count in found.jobs:
        lines.append(f"  {status:<{width}}  {owner or '(no owner)'}  {count}")
    return "\n".join(lines)
