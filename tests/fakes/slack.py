"""A fake Slack on 127.0.0.1 for driving the real slack-bolt / slack-sdk in tests.

``FakeSlack`` answers ``POST|GET /api/{method}`` for the Web API methods genbot uses, hosts
uploads and private files, records ``response_url`` posts, serves a Socket Mode websocket, and
enforces Slack's ``chat.update`` window (about one update per second per message, a Tier-3
window per workspace), answering ``ratelimited`` with HTTP 429 and ``Retry-After``. Every call is
recorded; messages are modelled per channel and thread. The payload builders and signed delivery
helpers it inherits live in :mod:`tests.fakes.slack_payloads`.

    async with FakeSlack() as fake:
        client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import aiohttp
from aiohttp import web

from tests.fakes.slack_agent import SlackAgentApi, load_manifest
from tests.fakes.slack_api import SlackWebApi
from tests.fakes.slack_files import SlackFilesApi
from tests.fakes.slack_home import SlackHomeApi
from tests.fakes.slack_model import (
    ApiCall,
    Ephemeral,
    ExternalRequest,
    FakeFile,
    FakeMessage,
    FakeTeam,
    FakeView,
    ResponsePost,
    SlackError,
    new_id,
    new_ts,
)
from tests.fakes.slack_oauth import SlackOAuth
from tests.fakes.slack_payloads import SlackPayloads
from tests.fakes.slack_streaming import DEFAULT_TIERS, SlackStreamingApi, ThreadStatus

T = TypeVar("T")

RECHECK = 0.05
Args = dict[str, Any]

LOGIN_PAGE = "<html><body>Sign in to Slack</body></html>"


class FakeSlack(
    SlackWebApi,
    SlackFilesApi,
    SlackStreamingApi,
    SlackOAuth,
    SlackHomeApi,
    SlackAgentApi,
    SlackPayloads,
):
    """A Slack workspace with one bot, answering on a loopback port."""

    def __init__(
        self,
        *,
        bot_token: str = "xoxb-fake-bot-token",
        app_token: str = "xapp-fake-app-token",
        signing_secret: str = "fake-signing-secret",
        team_id: str = "T0FAKE",
        bot_user_id: str = "UBOT",
        bot_id: str = "BBOT",
        app_id: str = "AFAKE",
        updates_per_minute: int = 50,
        update_window_seconds: float = 60.0,
        min_seconds_between_updates: float = 1.0,
        update_tolerance_seconds: float = 0.1,
        stream_window_seconds: float = 300.0,
        tier_per_minute: dict[str, int] | None = None,
        posts_per_window: int = 10,
        post_window_seconds: float = 5.0,
        token_rotation: bool = False,
        token_lifetime_seconds: int = 43200,
        file_processing_seconds: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        manifest: dict[str, Any] | None = None,
    ) -> None:
        self.manifest = load_manifest() if manifest is None else manifest
        """The app as installed (genbot's ``config/slack-manifest.yaml`` unless given)."""
        self.suggested_prompts: dict[tuple[str, str], dict[str, Any]] = {}
        self.ignored_prompts: list[dict[str, Any]] = []
        self.sessions: dict[tuple[str, str], str] = {}
        self.session_log: list[tuple[str, str, str]] = []
        self.app_token = app_token
        self.signing_secret = signing_secret
        self.app_id = app_id
        self.client_id = "fake-client-id"
        self.client_secret = "fake-client-secret"
        self.token_rotation = token_rotation
        self.token_lifetime_seconds = token_lifetime_seconds
        self.redirect_url: str | None = None
        self.issued_secrets: set[str] = set()
        self.default_team = team_id
        self.teams: dict[str, FakeTeam] = {
            team_id: FakeTeam(team_id, "Fake Team", bot_user_id, bot_id, bot_token or None)
        }
        self.updates_per_minute = updates_per_minute
        self.update_window_seconds = update_window_seconds
        self.min_seconds_between_updates = min_seconds_between_updates
        self.update_tolerance_seconds = update_tolerance_seconds
        self.stream_window_seconds = stream_window_seconds
        self.tier_per_minute = dict(DEFAULT_TIERS if tier_per_minute is None else tier_per_minute)
        self.posts_per_window = posts_per_window
        self.post_window_seconds = post_window_seconds
        self.streaming_refused: dict[str, str] = {}
        self.statuses: dict[tuple[str, str], ThreadStatus] = {}
        self.status_log: list[ThreadStatus] = []
        self.clock = clock
        self.file_processing_seconds = file_processing_seconds

        self.calls: list[ApiCall] = []
        self.ratelimited: list[ApiCall] = []
        self.channels: dict[str, list[FakeMessage]] = {}
        self.files: dict[str, FakeFile] = {}
        self.uploads: list[tuple[str, bytes]] = []
        self.downloads: list[tuple[str, bool]] = []
        self.ephemerals: list[Ephemeral] = []
        self.views: list[FakeView] = []
        self.home_views: dict[tuple[str, str], dict[str, Any]] = {}
        self.responses: list[ResponsePost] = []
        self.external_files: dict[str, bytes] = {}
        self.external_requests: list[ExternalRequest] = []
        self.users: dict[str, str] = {"U1": "alice", "U2": "bob", bot_user_id: "genbot"}
        self.locales: dict[str, str] = {}
        """User id → the language of their Slack (Preferences → Language & region), which
        ``users.info`` tells only with ``include_locale``; ``en-US`` when not set here."""
        self.usergroups: dict[str, tuple[str, list[str]]] = {}
        """User group id → its handle and its members (``usergroups.list``)."""
        self.answer_delays: dict[str, float] = {}
        """Web API method → seconds it takes to answer (a slow Slack)."""
        self.channels_without_bot: set[str] = set()
        self.group_dms: dict[str, str] = {}
        """Conversation id → name of the group DMs (``mpim``; ids ``G…`` or ``C…``, names
        ``mpdm-alice--bob--carol-1``): their events say ``channel_type: mpim``, commands and
        presses in them name them, ``conversations.info`` says ``is_mpim`` (:meth:`group_dm`)."""
        self.socket_received: list[dict[str, Any]] = []
        self.socket_acks: list[dict[str, Any]] = []
        self.socket_connections = 0

        self._failures: dict[str, deque[SlackError]] = {}
        self._triggers: dict[str, float] = {}
        self._response_urls: dict[str, tuple[str, str, Ephemeral | None]] = {}
        self._tickets: set[str] = set()
        self._ws: web.WebSocketResponse | None = None
        self._sockets: list[web.WebSocketResponse] = []
        self._update_times: dict[str, deque[float]] = {}
        self._codes: dict[str, tuple[str, float, str]] = {}
        self._last_update: dict[tuple[str, str], float] = {}
        self._tier_calls: dict[tuple[str, str], deque[float]] = {}
        self._caller_team = team_id
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.port = 0
        self._methods = {
            **self.web_api_methods(),
            **self.files_methods(),
            **self.streaming_methods(),
            **self.oauth_methods(),
            **self.home_methods(),
            **self.agent_methods(),
        }

    # Lifecycle -----------------------------------------------------------------------------

    async def start(self) -> FakeSlack:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/files-pri/{team_and_file}/{name}", self._file)
        app.router.add_post("/response/{response_id}", self._response_url)
        app.router.add_get("/socket-mode", self._socket)
        app.router.add_get("/external/{name}", self._external)
        app.router.add_get("/oauth/v2/authorize", self._authorize)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = self._runner.addresses[0][1]
        self._session = aiohttp.ClientSession()
        return self

    async def close(self) -> None:
        for ws in self._sockets:
            await ws.close()
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeSlack:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        """The Web API base URL for ``AsyncWebClient(base_url=...)``."""
        return f"{self.base_url}/api/"

    def external_url(self, name: str) -> str:
        """A URL on a host other than Slack's (``localhost`` instead of ``127.0.0.1``)."""
        return f"http://localhost:{self.port}/external/{name}"

    # Workspaces ----------------------------------------------------------------------------

    @property
    def team(self) -> FakeTeam:
        """The workspace of the call being answered (else the default one)."""
        return self.teams[self._caller_team]

    @property
    def team_id(self) -> str:
        return self.team.team_id

    @property
    def bot_user_id(self) -> str:
        return self.team.bot_user_id

    @property
    def bot_id(self) -> str:
        return self.team.bot_id

    @property
    def bot_token(self) -> str:
        return self.team.bot_token or ""

    @contextlib.contextmanager
    def in_team(self, team_id: str) -> Iterator[FakeTeam]:
        """Build payloads (users' messages, events, commands) in workspace ``team_id``."""
        previous, self._caller_team = self._caller_team, team_id
        try:
            yield self.teams[team_id]
        finally:
            self._caller_team = previous

    def _team_of(self, token: str | None) -> FakeTeam:
        for team in self.teams.values():
            if team.accepts(token):
                return team
            if token in team.revoked_tokens:
                raise SlackError("token_revoked")
        raise SlackError("invalid_auth" if token else "not_authed")

    def fail_next(self, method: str, error: str = "internal_error", *, status: int = 200) -> None:
        """Make the next call of ``method`` fail with ``error`` without doing anything."""
        self._failures.setdefault(method, deque()).append(SlackError(error, status=status))

    # Inspection ----------------------------------------------------------------------------

    def group_dm(self, channel: str, *users: str) -> str:
        """Make ``channel`` a group DM of ``users`` (and genbot) as Slack names it; its name."""
        names = "--".join(self.users.get(user, user).lower() for user in users)
        self.group_dms[channel] = f"mpdm-{names}-1"
        return self.group_dms[channel]

    def calls_to(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method]

    def responses_to(self, fields: Mapping[str, str]) -> list[ResponsePost]:
        """What the app posted to the ``response_url`` of ``fields`` (a slash command's or a
        press's), in order: answers to one command, whatever others were answered meanwhile."""
        response_id = fields["response_url"].rsplit("/", 1)[-1]
        return [post for post in self.responses if post.response_id == response_id]

    def message(self, channel: str, ts: str) -> FakeMessage | None:
        return next((m for m in self.channels.get(channel, []) if m.ts == ts), None)

    def thread(self, channel: str, thread_ts: str) -> list[FakeMessage]:
        """The parent and replies of a thread, oldest first."""
        return [
            m
            for m in self.channels.get(channel, [])
            if m.ts == thread_ts or m.thread_ts == thread_ts
        ]

    def bot_messages(self, channel: str | None = None) -> list[FakeMessage]:
        """Messages the bot posted (in ``channel``, or anywhere; in any workspace), oldest
        first."""
        keys = [channel] if channel else list(self.channels)
        bots = {team.bot_user_id for team in self.teams.values()}
        return [m for k in keys for m in self.channels.get(k, []) if m.user in bots]

    @property
    def socket_connected(self) -> bool:
        return self._ws is not None and not self._ws.closed

    async def wait_for(self, condition: Callable[[], T | None], timeout: float = 5.0) -> T:
        """Wait until ``condition()`` is truthy and return its value (bounded by ``timeout``).

        The condition is checked on every call the fake serves and at least every
        ``RECHECK`` seconds, so a condition over another peer's state (the simulator's
        requests) is seen even when no Slack call follows it.
        """
        try:
            async with asyncio.timeout(timeout), self._changed:
                while not (value := condition()):
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._changed.wait(), RECHECK)
                return value
        except TimeoutError:
            recent = [f"{c.method}:{c.error or 'ok'}" for c in self.calls[-8:]]
            raise TimeoutError(f"condition not met in {timeout}s; last calls {recent}") from None

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # HTTP plumbing -------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args: Args = dict(request.query)
        if request.method == "POST" and request.can_read_body:
            if request.content_type == "application/json":
                args.update(await request.json())
            else:
                form = await request.post()
                args.update({k: v for k, v in form.items() if isinstance(v, str)})
        for key in ("blocks", "view", "files", "metadata"):
            if isinstance(args.get(key), str) and args[key].startswith(("[", "{")):
                args[key] = json.loads(args[key])
        token = _bearer(request) or args.pop("token", None)
        args.update(_basic_auth(request))
        status: int = 200
        headers: dict[str, str] = {}
        body: dict[str, Any] = {"ok": True}
        if self.answer_delays.get(method):
            await asyncio.sleep(self.answer_delays[method])
        previous = self._caller_team
        try:
            handler = self._methods.get(method)
            if handler is None:
                raise SlackError("unknown_method", status=404)
            if method == "apps.connections.open":
                if token != self.app_token:
                    raise SlackError("invalid_auth" if token else "not_authed")
            elif method != "oauth.v2.access":
                self._caller_team = self._team_of(token).team_id
            if self._failures.get(method):
                raise self._failures[method].popleft()
            self.spend_tier(method, args)
            body = {"ok": True, **handler(args)}
        except SlackError as error:
            status, headers = error.status, error.headers
            body = {"ok": False, "error": error.error}
            if error.errors:
                body["errors"] = error.errors
        finally:
            caller, self._caller_team = self._caller_team, previous
        call = ApiCall(method, args, token, status, body, caller)
        self.calls.append(call)
        if body.get("error") == "ratelimited":
            self.ratelimited.append(call)
        await self._notify()
        return web.json_response(body, status=status, headers=headers)

    async def _upload(self, request: web.Request) -> web.Response:
        file = self.files.get(request.match_info["file_id"])
        if file is None:
            return web.Response(status=404, text="unknown upload")
        file.data = await request.read()
        self.uploads.append((file.id, file.data))
        await self._notify()
        return web.Response(text=f"OK - {len(file.data)}")

    async def _file(self, request: web.Request) -> web.Response:
        team_id, _, file_id = request.match_info["team_and_file"].partition("-")
        file = self.files.get(file_id)
        team = self.teams.get(team_id)
        authorized = team is not None and team.accepts(_bearer(request))
        self.downloads.append((file_id, authorized))
        if not authorized:
            return web.Response(text=LOGIN_PAGE, content_type="text/html")
        if file is None or file.data is None:
            return web.Response(status=404, text="file_not_found")
        return web.Response(body=file.data, content_type=file.mimetype)

    async def _external(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.external_requests.append(
            ExternalRequest(request.path, request.headers.get("Authorization"))
        )
        await self._notify()
        if name not in self.external_files:
            return web.Response(status=404)
        return web.Response(body=self.external_files[name], content_type="image/png")

    async def _response_url(self, request: web.Request) -> web.Response:
        response_id = request.match_info["response_id"]
        if response_id not in self._response_urls:
            return web.json_response({"ok": False, "error": "expired_url"}, status=404)
        channel, user, pressed = self._response_urls[response_id]
        body = await request.json()
        self.responses.append(ResponsePost(response_id, body, channel, user))
        if pressed is not None and body.get("replace_original"):
            pressed.text, pressed.blocks = body.get("text", ""), body.get("blocks") or []
        elif pressed is not None and body.get("delete_original"):
            self.ephemerals.remove(pressed)
        elif body.get("response_type", "ephemeral") == "ephemeral":
            self.ephemerals.append(
                Ephemeral(
                    channel,
                    user,
                    body.get("text", ""),
                    "response_url",
                    None,
                    body.get("blocks") or [],
                )
            )
        else:
            self._add_message(
                channel, self.bot_user_id, body.get("text", ""), body.get("blocks") or []
            )
        await self._notify()
        return web.json_response({"ok": True})

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("ticket") not in self._tickets:
            return web.Response(status=401, text="invalid ticket")
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self._ws = ws
        self._sockets.append(ws)
        self.socket_connections += 1
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": 1,
                "debug_info": {"host": "fake-slack", "approximate_connection_time": 18060},
                "connection_info": {"app_id": self.app_id},
            }
        )
        await self._notify()
        async for frame in ws:
            if frame.type == aiohttp.WSMsgType.TEXT:
                data = json.loads(frame.data)
                self.socket_received.append(data)
                if "envelope_id" in data:
                    self.socket_acks.append(data)
                await self._notify()
        if self._ws is ws:
            self._ws = None
        await self._notify()
        return ws

    # Shared model operations --------------------------------------------------------------

    def _add_message(
        self,
        channel: str,
        user: str,
        text: str,
        blocks: list[dict[str, Any]] | None = None,
        thread_ts: str | None = None,
        files: list[FakeFile] | None = None,
    ) -> FakeMessage:
        message = FakeMessage(
            channel=channel,
            ts=new_ts(),
            user=user,
            text=text,
            blocks=blocks or [],
            thread_ts=thread_ts,
            files=files or [],
            bot_id=self.bot_id if user == self.bot_user_id else None,
            team=self.team_id,
        )
        if thread_ts is not None:
            parent = self.message(channel, thread_ts)
            if parent is not None and parent.thread_ts is None:
                parent.thread_ts = parent.ts
        message.timeline.append((self.clock(), message.shown))
        self.channels.setdefault(channel, []).append(message)
        self.clear_status_on_reply(message)
        return message

    def _issue_trigger(self) -> str:
        trigger_id = new_id("trig.")
        self._triggers[trigger_id] = self.clock()
        return trigger_id

    def _issue_response_url(self, channel: str, user: str, pressed: Ephemeral | None = None) -> str:
        """A ``response_url``; one handed out with a press on the ephemeral message
        ``pressed`` replaces (``replace_original``) or deletes (``delete_original``) it, as
        Slack does."""
        response_id = new_id("R")
        self._response_urls[response_id] = (channel, user, pressed)
        return f"{self.base_url}/response/{response_id}"


def _basic_auth(request: web.Request) -> dict[str, str]:
    """OAuth client credentials sent as HTTP Basic auth (how slack-sdk sends them)."""
    header = request.headers.get("Authorization", "")
    if not header.startswith("Basic "):
        return {}
    decoded = base64.b64decode(header.removeprefix("Basic ")).decode()
    client_id, _, client_secret = decoded.partition(":")
    return {"client_id": client_id, "client_secret": client_secret}


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer "):
        return None
    return header.removeprefix("Bearer ").strip() or None
