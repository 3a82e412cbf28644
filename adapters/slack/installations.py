"""bolt's installation and OAuth-state stores over genbot's own database.

:class:`InstallationStore` is slack-sdk's ``AsyncInstallationStore`` and
:class:`OAuthStateStore` its ``AsyncOAuthStateStore``, both kept through the port
:class:`adapters.slack.ports.Installations` (genbot's store, SQLite or PostgreSQL). An
installation is stored as slack-sdk serializes it, tokens included, one per workspace and
installing user; a workspace's bot token is its newest installation's. genbot asks for bot
scopes only: revoking the bot's token (``tokens_revoked``) or uninstalling the app
(``app_uninstalled``) forgets the whole workspace.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from slack_sdk.oauth.installation_store import Bot
from slack_sdk.oauth.installation_store import Installation as SdkInstallation
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore

from adapters.slack.ports import Installation, Installations, Installed

log = logging.getLogger(__name__)

STATE_SECONDS = 600
"""How long an install link's ``state`` stays valid (bolt's default)."""
USER_TOKEN_FIELDS = ("user_token", "user_scopes", "user_refresh_token", "user_token_expires_at")


def installation_data(installation: SdkInstallation) -> dict[str, Any]:
    """``installation`` as JSON values (times as Unix seconds)."""
    return {key: _plain(key, value) for key, value in installation.to_dict_for_copying().items()}


def installation_from(data: Mapping[str, Any]) -> SdkInstallation:
    """The installation :func:`installation_data` stored."""
    return SdkInstallation(**dict(data))


def _plain(key: str, value: Any) -> Any:
    """A JSON value; slack-sdk reads expiry times back only as whole seconds."""
    if not isinstance(value, datetime):
        return value
    return value.timestamp() if key == "installed_at" else int(value.timestamp())


def _id(value: str | None) -> str:
    return value or ""


class InstallationStore(AsyncInstallationStore):
    """slack-sdk's installation store, kept in genbot's database."""

    def __init__(self, storage: Installations, *, clock: Callable[[], float] = time.time) -> None:
        self._storage = storage
        self._clock = clock

    @property
    def logger(self) -> logging.Logger:
        return log

    async def async_save(self, installation: SdkInstallation) -> None:
        await self._storage.save_slack_installation(
            Installation(
                enterprise_id=_id(installation.enterprise_id),
                team_id=_id(installation.team_id),
                user_id=_id(installation.user_id),
                installed_at=float(installation.installed_at or self._clock()),
                data=installation_data(installation),
            )
        )

    async def async_save_bot(self, bot: Bot) -> None:
        """A rotated bot token: the workspace's newest installation gets it."""
        found = await self._newest(bot.enterprise_id, bot.team_id, bot.is_enterprise_install)
        if found is None:
            return
        data = dict(found.data)
        for key, value in bot.to_dict_for_copying().items():
            if key != "custom_values":
                data[key] = _plain(key, value)
        await self._storage.save_slack_installation(
            Installation(
                found.enterprise_id, found.team_id, found.user_id, found.installed_at, data
            )
        )

    async def async_find_bot(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        is_enterprise_install: bool | None = False,
    ) -> Bot | None:
        found = await self._newest(enterprise_id, team_id, is_enterprise_install)
        if found is None or not found.data.get("bot_token"):
            return None
        bot: Bot = installation_from(found.data).to_bot()
        return bot

    async def async_find_installation(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> SdkInstallation | None:
        """The workspace's installation (``user_id``'s, when given), carrying the workspace's
        newest bot token."""
        newest = await self._newest(enterprise_id, team_id, is_enterprise_install)
        if newest is None:
            return None
        if user_id is None:
            return installation_from(newest.data)
        team = "" if is_enterprise_install else _id(team_id)
        mine = await self._storage.find_slack_installation(_id(enterprise_id), team, user_id)
        if mine is None:
            return None
        bot_fields = {k: v for k, v in newest.data.items() if k.startswith("bot_")}
        return installation_from({**mine.data, **bot_fields})

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        """The bot's token is gone: the workspace's installations are of no use any more."""
        await self._storage.delete_slack_installations(_id(enterprise_id), _id(team_id))

    async def async_delete_installation(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None = None,
    ) -> None:
        """Forget the workspace's installations; with ``user_id``, only that user's token
        (the installation and its bot token stay)."""
        if user_id is None:
            await self._storage.delete_slack_installations(_id(enterprise_id), _id(team_id))
            return
        mine = await self._storage.find_slack_installation(
            _id(enterprise_id), _id(team_id), user_id
        )
        if mine is None:
            return
        if not mine.data.get("bot_token"):
            await self._storage.delete_slack_installations(
                mine.enterprise_id, mine.team_id, user_id
            )
            return
        data = {k: v for k, v in mine.data.items() if k not in USER_TOKEN_FIELDS}
        await self._storage.save_slack_installation(
            Installation(mine.enterprise_id, mine.team_id, user_id, mine.installed_at, data)
        )

    async def _newest(
        self, enterprise_id: str | None, team_id: str | None, is_enterprise_install: bool | None
    ) -> Installed | None:
        team = "" if is_enterprise_install else _id(team_id)
        return await self._storage.find_slack_installation(_id(enterprise_id), team)


class OAuthStateStore(AsyncOAuthStateStore):
    """slack-sdk's OAuth state store, kept in genbot's database: a state is good once, for
    ``expiration_seconds``, in whichever genbot process the user's browser comes back to."""

    def __init__(
        self,
        storage: Installations,
        *,
        expiration_seconds: int = STATE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._storage = storage
        self.expiration_seconds = expiration_seconds
        self._clock = clock

    @property
    def logger(self) -> logging.Logger:
        return log

    async def async_issue(self, *args: Any, **kwargs: Any) -> str:
        state = secrets.token_urlsafe(24)
        await self._storage.issue_oauth_state(state, self._clock() + self.expiration_seconds)
        return state

    async def async_consume(self, state: str) -> bool:
        return bool(state) and await self._storage.consume_oauth_state(state)
