"""Which bot token the Slack surface uses in a workspace.

One workspace (``[slack] bot_token``): that token everywhere. Distributed (OAuth): each
workspace's token from its installation in genbot's database, rotated before it expires when
the app has token rotation on (Slack then returns refresh tokens; when several processes rotate
at once, the one Slack refuses takes the tokens the first saved), and cached for a minute. A
workspace without an installation (never installed, or uninstalled) is
:class:`NotInstalled`. Private file URLs name their workspace (``files-pri/T…-F…``), so a
download uses the token of the workspace the file was shared in.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from slack_sdk.errors import SlackTokenRotationError
from slack_sdk.oauth.installation_store import Installation
from slack_sdk.oauth.token_rotation.async_rotator import AsyncTokenRotator

from bot.kernel import SurfaceError

from .installations import InstallationStore

CACHE_SECONDS = 60.0
ROTATE_MINUTES_BEFORE_EXPIRY = 120
"""As bolt does for the requests it authorizes."""
ROTATION_SETTLE_SECONDS = 5.0
"""How long a process whose rotation Slack refused waits for another process's rotated tokens."""
ROTATION_POLL_SECONDS = 0.1
_FILE_TEAM = re.compile(r"/files-pri/(T[A-Z0-9]+)-")


class NotInstalled(SurfaceError):
    """genbot is not (or no longer) installed in the workspace."""


def team_of_file(url: str) -> str | None:
    """The workspace a private file URL belongs to, when it says."""
    found = _FILE_TEAM.search(url)
    return found.group(1) if found else None


class TeamTokens(Protocol):
    """Bot tokens by workspace."""

    async def bot_token(self, team_id: str) -> str:
        """The bot token to use in ``team_id``; :class:`NotInstalled` when there is none."""
        ...

    def forget(self, team_id: str) -> None:
        """Drop what is remembered of ``team_id`` (its tokens were revoked)."""
        ...


class OneWorkspace:
    """``[slack] bot_token``, for every workspace the token can reach."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def bot_token(self, team_id: str) -> str:
        return self._token

    def forget(self, team_id: str) -> None:
        """Nothing to forget: the token is configured."""


@dataclass
class _Cached:
    token: str
    until: float


class InstalledWorkspaces:
    """Tokens from the installation store, rotated by ``rotator`` when one is given."""

    def __init__(
        self,
        store: InstallationStore,
        rotator: AsyncTokenRotator | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._rotator = rotator
        self._clock = clock
        self._cache: dict[str, _Cached] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def bot_token(self, team_id: str) -> str:
        cached = self._cache.get(team_id)
        if cached is not None and cached.until > self._clock():
            return cached.token
        async with self._locks.setdefault(team_id, asyncio.Lock()):
            return await self._load(team_id)

    def forget(self, team_id: str) -> None:
        self._cache.pop(team_id, None)

    async def _load(self, team_id: str) -> str:
        installation = await self._store.async_find_installation(
            enterprise_id=None, team_id=team_id
        )
        if installation is None or not installation.bot_token:
            raise NotInstalled(f"genbot is not installed in the Slack workspace {team_id}")
        until = self._clock() + CACHE_SECONDS
        if self._rotator is not None and installation.bot_refresh_token:
            installation = await self._rotated(self._rotator, installation)
            expires_at = installation.bot_token_expires_at
            if expires_at is not None:
                renew_at = expires_at - ROTATE_MINUTES_BEFORE_EXPIRY * 60
                until = min(until, max(renew_at, self._clock()))
        token = str(installation.bot_token)
        self._cache[team_id] = _Cached(token, until)
        return token

    async def _rotated(
        self, rotator: AsyncTokenRotator, installation: Installation
    ) -> Installation:
        """``installation`` with fresh tokens when they are due (saved for every process). A
        refresh token works once: when another process rotated the same tokens first, Slack
        refuses this rotation, and the tokens that process saves are used."""
        try:
            refreshed = await rotator.perform_token_rotation(
                installation=installation, minutes_before_expiration=ROTATE_MINUTES_BEFORE_EXPIRY
            )
        except SlackTokenRotationError as error:
            elsewhere = await self._rotated_elsewhere(installation)
            if elsewhere is None:
                raise SurfaceError(
                    f"the Slack token of workspace {installation.team_id} could not be "
                    f"refreshed: {error}"
                ) from error
            return elsewhere
        if refreshed is None:
            return installation
        await self._store.async_save(refreshed)
        return refreshed

    async def _rotated_elsewhere(self, installation: Installation) -> Installation | None:
        """The installation another process saved with rotated tokens, waited for (bounded)."""
        try:
            async with asyncio.timeout(ROTATION_SETTLE_SECONDS):
                while True:
                    found = await self._store.async_find_installation(
                        enterprise_id=None, team_id=installation.team_id
                    )
                    if found is None:
                        return None
                    if found.bot_refresh_token != installation.bot_refresh_token:
                        return found
                    await asyncio.sleep(ROTATION_POLL_SECONDS)
        except TimeoutError:
            return None
