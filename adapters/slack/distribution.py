"""genbot installed by OAuth into any number of workspaces (``[slack] client_id`` and
``client_secret``), served by bolt's own OAuth flow.

``/slack/install`` shows an "Add to Slack" page whose link carries a ``state`` kept in genbot's
database (and in a cookie, so the redirect is checked to come back to the browser that started
it); Slack sends the user back to ``/slack/oauth_redirect`` with a one-time code, which bolt
trades (``oauth.v2.access``) for the workspace's bot token, stored as an installation
(:mod:`adapters.slack.installations`). bolt then authorizes every request with the token of
the workspace it comes from, rotating it first when the app has token rotation on.
``app_uninstalled`` and ``tokens_revoked`` forget the workspace's installation (bolt's own
listeners) and the token the surface had cached.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import yarl
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.listener.async_builtins import AsyncTokenRevocationListeners
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.oauth.token_rotation.async_rotator import AsyncTokenRotator
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.ports import Installations
from adapters.slack.settings import SlackSettings
from bot.kernel import Sealer

from .installations import STATE_SECONDS, InstallationStore, OAuthStateStore
from .tokens import InstalledWorkspaces, TeamTokens

BOT_SCOPES = (
    "app_mentions:read",
    "assistant:write",
    "channels:history",
    "chat:write",
    "commands",
    "files:read",
    "files:write",
    "groups:history",
    "im:history",
    "im:read",
    "im:write",
    "mpim:history",
    "users:read",
    "usergroups:read",
)
"""What genbot asks a workspace for (the manifest's bot scopes)."""
INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"


def authorize_url(api_url: str) -> str:
    """Slack's authorization page beside its Web API (``https://slack.com/oauth/v2/authorize``
    for ``https://slack.com/api/``)."""
    return str(yarl.URL(api_url).origin() / "oauth" / "v2" / "authorize")


class Distribution:
    """The installation store, OAuth state store and tokens of a distributed genbot."""

    def __init__(
        self,
        settings: SlackSettings,
        storage: Installations,
        sealer: Sealer,
        client: AsyncWebClient,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``clock``: what OAuth states are dated by, the clock ``storage`` checks them on."""
        self.settings = settings
        self.installations = InstallationStore(storage, sealer)
        self.states = OAuthStateStore(storage, expiration_seconds=STATE_SECONDS, clock=clock)
        rotator = AsyncTokenRotator(
            client_id=settings.client_id,
            client_secret=settings.client_secret.get_secret_value(),
            client=client,
        )
        self.tokens: TeamTokens = InstalledWorkspaces(self.installations, rotator)
        self._revocations = AsyncTokenRevocationListeners(self.installations)

    def oauth_settings(self) -> AsyncOAuthSettings:
        return AsyncOAuthSettings(
            client_id=self.settings.client_id,
            client_secret=self.settings.client_secret.get_secret_value(),
            scopes=list(BOT_SCOPES),
            redirect_uri=self.settings.redirect_uri or None,
            install_path=INSTALL_PATH,
            redirect_uri_path=REDIRECT_PATH,
            authorization_url=authorize_url(self.settings.api_url),
            installation_store=self.installations,
            state_store=self.states,
            state_expiration_seconds=STATE_SECONDS,
        )

    def listen(self, app: AsyncApp) -> None:
        """Forget a workspace when Slack says genbot left it."""
        app.event("app_uninstalled")(self._uninstalled)
        app.event("tokens_revoked")(self._revoked)

    async def _uninstalled(self, context: AsyncBoltContext) -> None:
        await self._revocations.handle_app_uninstalled_events(context)
        self.tokens.forget(context.team_id or "")

    async def _revoked(self, event: dict[str, object], context: AsyncBoltContext) -> None:
        await self._revocations.handle_tokens_revoked_events(event, context)
        self.tokens.forget(context.team_id or "")
