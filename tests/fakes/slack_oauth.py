"""Slack's OAuth v2 install and uninstall in the fake, mixed into
:class:`tests.fakes.slack.FakeSlack`.

``GET /oauth/v2/authorize`` stands for a user approving the app in a browser: it checks the
``client_id``, issues a one-time ``code`` for the workspace named by the ``team`` query
parameter, and redirects to ``redirect_uri`` (or :attr:`SlackOAuth.redirect_url`) with the code
and the ``state`` it was given. ``oauth.v2.access`` trades a code (once, within ten minutes) for
a bot token, checks the client credentials, and with :attr:`SlackOAuth.token_rotation` returns a
refresh token and an expiry; ``grant_type=refresh_token`` rotates the token (the old one stops
working). :meth:`SlackOAuth.uninstall` revokes a workspace's tokens and returns the
``app_uninstalled`` and ``tokens_revoked`` events Slack sends. :meth:`SlackOAuth.install` plays
the browser through the whole flow against an app's ``/slack/install``.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode, urlparse

import aiohttp
from aiohttp import web

from tests.fakes.slack_model import FakeTeam, SlackError, new_id

if TYPE_CHECKING:
    from tests.fakes.slack_payloads import SlackPayloads

Args = dict[str, Any]

CODE_TTL_SECONDS = 600.0
_LINK = re.compile(r'href="([^"]*oauth/v2/authorize[^"]*)"')


@dataclass
class InstallOutcome:
    """What the browser saw at the end of an install: the app's answer to the redirect."""

    status: int
    body: str
    code: str | None


class SlackOAuth:
    """OAuth v2 of the fake Slack."""

    client_id: str
    client_secret: str
    app_id: str
    token_rotation: bool
    token_lifetime_seconds: int
    redirect_url: str | None
    issued_secrets: set[str]
    """Every code and token the fake handed out (what an app must never print)."""
    teams: dict[str, FakeTeam]
    users: dict[str, str]
    clock: Callable[[], float]
    _codes: dict[str, tuple[str, float, str]]
    _session: aiohttp.ClientSession | None

    if TYPE_CHECKING:

        @property
        def base_url(self) -> str: ...

    def add_workspace(self, team_id: str, name: str, bot_user_id: str) -> FakeTeam:
        """A workspace where the app is not installed yet."""
        team = FakeTeam(team_id, name, bot_user_id, "B" + bot_user_id.removeprefix("U"))
        self.teams[team_id] = team
        self.users[bot_user_id] = "genbot"
        return team

    @property
    def authorize_url(self) -> str:
        return f"{self.base_url}/oauth/v2/authorize"

    def oauth_methods(self) -> dict[str, Callable[[Args], Args]]:
        return {"oauth.v2.access": self._oauth_access}

    # Browser side ---------------------------------------------------------------------------

    async def _authorize(self, request: web.Request) -> web.Response:
        query = request.query
        if query.get("client_id") != self.client_id:
            return web.Response(status=400, text="invalid client_id")
        team = self.teams.get(query.get("team", ""))
        if team is None:
            return web.Response(status=400, text="choose a workspace (team=…)")
        redirect = query.get("redirect_uri") or self.redirect_url
        if not redirect:
            return web.Response(status=400, text="no redirect URL")
        code = new_id("code-")
        self.issued_secrets.add(code)
        self._codes[code] = (team.team_id, self.clock(), query.get("user", "U1"))
        target = f"{redirect}?{urlencode({'code': code, 'state': query.get('state', '')})}"
        raise web.HTTPFound(target)

    async def install(self, install_url: str, team_id: str, user: str = "U1") -> InstallOutcome:
        """A user installing the app into ``team_id`` from the app's install page."""
        assert self._session is not None
        async with self._session.get(install_url, allow_redirects=False) as page:
            text = await page.text()
            cookie = page.headers.get("Set-Cookie", "").split(";", 1)[0]
        found = _LINK.search(text)
        if found is None:
            return InstallOutcome(page.status, text, None)
        authorize = html.unescape(found.group(1))
        parsed = urlparse(authorize)
        params = {k: v[0] for k, v in parse_qs(parsed.query).items()}
        params.update({"team": team_id, "user": user})
        async with self._session.get(
            self.authorize_url, params=params, allow_redirects=False
        ) as approved:
            location = approved.headers.get("Location", "")
        code = parse_qs(urlparse(location).query).get("code", [None])[0]
        headers = {"Cookie": cookie} if cookie else {}
        async with self._session.get(location, headers=headers, allow_redirects=False) as back:
            return InstallOutcome(back.status, await back.text(), code)

    # Web API --------------------------------------------------------------------------------

    def _oauth_access(self, args: Args) -> Args:
        if args.get("client_id") != self.client_id:
            raise SlackError("invalid_client_id")
        if args.get("client_secret") != self.client_secret:
            raise SlackError("bad_client_secret")
        if args.get("grant_type") == "refresh_token":
            return self._refresh(str(args.get("refresh_token") or ""))
        issued = self._codes.pop(str(args.get("code") or ""), None)
        if issued is None or self.clock() - issued[1] > CODE_TTL_SECONDS:
            raise SlackError("invalid_code")
        team = self.teams[issued[0]]
        team.installer = issued[2]
        self._new_tokens(team)
        answer: Args = {
            "app_id": self.app_id,
            "authed_user": {"id": team.installer},
            "scope": "app_mentions:read,chat:write,commands",
            "token_type": "bot",
            "access_token": team.bot_token,
            "bot_user_id": team.bot_user_id,
            "team": {"id": team.team_id, "name": team.name},
            "enterprise": None,
            "is_enterprise_install": False,
        }
        if team.refresh_token:
            answer |= {"refresh_token": team.refresh_token, "expires_in": self._lifetime()}
        return answer

    def _refresh(self, refresh_token: str) -> Args:
        team = next((t for t in self.teams.values() if t.refresh_token == refresh_token), None)
        if team is None or not refresh_token:
            raise SlackError("invalid_refresh_token")
        self._new_tokens(team)
        return {
            "app_id": self.app_id,
            "token_type": "bot",
            "access_token": team.bot_token,
            "refresh_token": team.refresh_token,
            "expires_in": self._lifetime(),
            "team": {"id": team.team_id, "name": team.name},
            "enterprise": None,
            "is_enterprise_install": False,
            "scope": "app_mentions:read,chat:write,commands",
            "bot_user_id": team.bot_user_id,
        }

    def _lifetime(self) -> int:
        return self.token_lifetime_seconds

    def _new_tokens(self, team: FakeTeam) -> None:
        if team.bot_token is not None:
            team.earlier_tokens.add(team.bot_token)
        prefix = "xoxe.xoxb" if self.token_rotation else "xoxb"
        team.bot_token = f"{prefix}-{team.team_id}-{new_id('')}"
        self.issued_secrets.add(team.bot_token)
        if self.token_rotation:
            team.refresh_token = f"xoxe-1-{team.team_id}-{new_id('')}"
            self.issued_secrets.add(team.refresh_token)
            team.token_expires_at = time.time() + self._lifetime()

    # Uninstall ------------------------------------------------------------------------------

    def uninstall(self, team_id: str) -> list[dict[str, Any]]:
        """Revoke the app's tokens in ``team_id``; the events Slack then sends the app."""
        team = self.teams[team_id]
        if team.bot_token is not None:
            team.revoked_tokens.add(team.bot_token)
        team.revoked_tokens |= team.earlier_tokens
        team.earlier_tokens.clear()
        team.bot_token = team.refresh_token = None
        payloads: SlackPayloads = self  # type: ignore[assignment]
        return [
            payloads.event_callback({"type": "app_uninstalled"}, team_id=team_id),
            payloads.event_callback(
                {"type": "tokens_revoked", "tokens": {"oauth": [], "bot": [team.bot_user_id]}},
                team_id=team_id,
            ),
        ]
