"""bolt's installation and OAuth-state stores over genbot's own database.

:class:`InstallationStore` is slack-sdk's ``AsyncInstallationStore`` and
:class:`OAuthStateStore` its ``AsyncOAuthStateStore``, both kept through the port
:class:`adapters.slack.ports.Installations` (genbot's store, SQLite or PostgreSQL). An
installation is stored as slack-sdk serializes it, one per workspace and installing user, with
its tokens (:data:`SEALED_FIELDS`) sealed into one ``sealed`` value (:mod:`bot.kernel.sealer`); a
workspace's bot token is its newest installation's. An installation stored before sealing
(plain) or sealed with an older key is read as it is, and stored again sealed with the current
key: at its next token rotation, or at once when its tokens do not rotate. A row under the
reserved team :data:`KEY_CHECK_TEAM` holds a known value sealed with the current key, so that a
key that does not open the stored tokens stops genbot at startup (:meth:`check_key`). genbot
asks for bot scopes only: revoking the bot's token (``tokens_revoked``) or uninstalling the
app (``app_uninstalled``) forgets the whole workspace.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from slack_sdk.oauth.installation_store import Bot
from slack_sdk.oauth.installation_store import Installation as SdkInstallation
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore

from adapters.slack.ports import Installation, Installations
from bot.kernel import Sealer, SealError

log = logging.getLogger(__name__)

STATE_SECONDS = 600
"""How long an install link's ``state`` stays valid (bolt's default)."""
USER_TOKEN_FIELDS = ("user_token", "user_scopes", "user_refresh_token", "user_token_expires_at")
SEALED_FIELDS = (
    "bot_token",
    "bot_refresh_token",
    "user_token",
    "user_refresh_token",
    "incoming_webhook_url",
    "custom_values",
)
"""What of an installation is secret: sealed together as its ``sealed`` value."""
SEALED = "sealed"
KEY_CHECK_TEAM = "genbot-key-check"
"""The team id of the key-check row (Slack's team ids are ``T…``: no workspace has it)."""
KEY_CHECK = "genbot key check"


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


def sealed_data(data: Mapping[str, Any], sealer: Sealer) -> dict[str, Any]:
    """``data`` as stored: its :data:`SEALED_FIELDS` sealed into one ``sealed`` value."""
    secret = {key: data[key] for key in SEALED_FIELDS if data.get(key) is not None}
    plain = {key: value for key, value in data.items() if key not in SEALED_FIELDS}
    return {**plain, SEALED: sealer.seal(json.dumps(secret))}


def opened_data(data: Mapping[str, Any], sealer: Sealer) -> tuple[dict[str, Any], bool]:
    """Stored ``data`` opened, and whether it should be stored again (it was plain, or sealed
    with an older key); :class:`bot.kernel.SealError` when no key opens it."""
    stored = data.get(SEALED)
    if not isinstance(stored, str):
        return dict(data), True
    opened = sealer.open(stored)
    plain = {key: value for key, value in data.items() if key != SEALED}
    return {**plain, **json.loads(opened.secret)}, opened.stale


class InstallationStore(AsyncInstallationStore):
    """slack-sdk's installation store, kept in genbot's database."""

    def __init__(
        self,
        storage: Installations,
        sealer: Sealer,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._storage = storage
        self._sealer = sealer
        self._clock = clock

    @property
    def logger(self) -> logging.Logger:
        return log

    async def check_key(self) -> None:
        """Stop (:class:`bot.kernel.SealError`) when genbot's keys do not open what is stored:
        the key-check row is opened, made when missing and sealed again with the current key
        when an older key opened it."""
        found = await self._storage.find_slack_installation("", KEY_CHECK_TEAM)
        if found is not None:
            try:
                data, stale = opened_data(found.data, self._sealer)
            except SealError as error:
                raise SealError(f"the Slack installations cannot be read: {error}") from None
            if not stale and data.get("check") == KEY_CHECK:
                return
        check = Installation("", KEY_CHECK_TEAM, "", self._clock(), {"check": KEY_CHECK})
        await self._save(check)

    async def async_save(self, installation: SdkInstallation) -> None:
        await self._save(
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
        await self._save(
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
        found = newest
        if user_id is not None:
            team = "" if is_enterprise_install else _id(team_id)
            mine = await self._find(_id(enterprise_id), team, user_id)
            if mine is None:
                return None
            bot_fields = {k: v for k, v in newest.data.items() if k.startswith("bot_")}
            found = Installation(
                mine.enterprise_id,
                mine.team_id,
                mine.user_id,
                mine.installed_at,
                {**mine.data, **bot_fields},
            )
        return installation_from(found.data)

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
        mine = await self._find(_id(enterprise_id), _id(team_id), user_id)
        if mine is None:
            return
        if not mine.data.get("bot_token"):
            await self._storage.delete_slack_installations(
                mine.enterprise_id, mine.team_id, user_id
            )
            return
        data = {k: v for k, v in mine.data.items() if k not in USER_TOKEN_FIELDS}
        await self._save(
            Installation(mine.enterprise_id, mine.team_id, user_id, mine.installed_at, data)
        )

    async def _newest(
        self, enterprise_id: str | None, team_id: str | None, is_enterprise_install: bool | None
    ) -> Installation | None:
        team = "" if is_enterprise_install else _id(team_id)
        return await self._find(_id(enterprise_id), team)

    async def _save(self, installation: Installation) -> None:
        """Store ``installation`` with its tokens sealed."""
        await self._storage.save_slack_installation(
            replace(installation, data=sealed_data(installation.data, self._sealer))
        )

    async def _find(
        self, enterprise_id: str, team_id: str, user_id: str | None = None
    ) -> Installation | None:
        """The stored installation, opened; one stored plain or sealed with an older key is
        stored again sealed, unless its tokens rotate (their next rotation stores them, and
        a write here could undo a rotation another process is saving)."""
        found = await self._storage.find_slack_installation(enterprise_id, team_id, user_id)
        if found is None:
            return None
        try:
            data, stale = opened_data(found.data, self._sealer)
        except SealError:
            log.error(
                "the Slack installation of %s cannot be opened with genbot's keys: restore the "
                "key it was sealed with as [storage] secret_key_previous, or install genbot "
                "in that workspace again",
                found.team_id or found.enterprise_id,
            )
            return None
        opened = Installation(
            found.enterprise_id, found.team_id, found.user_id, found.installed_at, data
        )
        if stale and self._sealer.can_seal and not data.get("bot_refresh_token"):
            await self._save(opened)
        return opened


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
