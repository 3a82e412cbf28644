"""Which Slack user groups each user is in, for the tiers mapped from them (``User.roles``).

One ``usergroups.list`` call (``include_users``) per workspace gives every group with its
members; the answer is kept for ``ttl`` seconds. An event waits at most ``wait`` seconds for a
read: when it takes longer, or fails (a workspace on a free plan has no user groups, an app
without the ``usergroups:read`` scope is refused), the event goes on with the groups last read
(none the first time) and the read goes on for the events after it. One read per workspace at a
time; a failed read is not repeated before ``ttl`` either.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)

TTL_SECONDS = 300.0
WAIT_SECONDS = 2.0
WORKSPACES_KEPT = 256


@dataclass
class _Read:
    """One workspace's groups by user, when they were read, and the read under way."""

    groups: dict[str, frozenset[str]] = field(default_factory=dict)
    read_at: float | None = None
    reading: asyncio.Task[None] | None = None


class UserGroups:
    """The user groups of each workspace's users (see the module docstring)."""

    def __init__(
        self,
        *,
        ttl: float = TTL_SECONDS,
        wait: float = WAIT_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.wait = wait
        self._monotonic = monotonic
        self._reads: dict[str, _Read] = {}

    async def of(self, client: AsyncWebClient, team_id: str, user_id: str) -> frozenset[str]:
        """The ids of the user groups ``user_id`` is in (what was last read, waiting at most
        ``wait`` seconds for a fresher read)."""
        read = self._reads.get(team_id)
        if read is None:
            read = self._reads[team_id] = _Read()
            while len(self._reads) > WORKSPACES_KEPT:
                self._reads.pop(next(iter(self._reads)))
        stale = read.read_at is None or self._monotonic() - read.read_at >= self.ttl
        if stale and read.reading is None:
            read.reading = asyncio.create_task(self._read(client, team_id, read))
        if read.reading is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(read.reading), self.wait)
        return read.groups.get(user_id, frozenset())

    async def close(self) -> None:
        """Cancel the reads under way (the adapter stops)."""
        reading = [read.reading for read in self._reads.values() if read.reading is not None]
        for task in reading:
            task.cancel()
        await asyncio.gather(*reading, return_exceptions=True)

    async def _read(self, client: AsyncWebClient, team_id: str, read: _Read) -> None:
        try:
            answer = await client.usergroups_list(include_users=True)
            members: dict[str, set[str]] = {}
            for group in answer.get("usergroups") or []:
                if group.get("date_delete"):
                    continue
                for user in group.get("users") or []:
                    members.setdefault(str(user), set()).add(str(group["id"]))
            read.groups = {user: frozenset(groups) for user, groups in members.items()}
        except SlackApiError as error:
            log.warning(
                "usergroups.list failed in %s: %s (tiers mapped from Slack user groups do not "
                "apply until it works)",
                team_id,
                error.response.get("error"),
            )
        except Exception:
            log.exception("usergroups.list failed in %s", team_id)
        finally:
            read.read_at = self._monotonic()
            read.reading = None
