"""The server half of the fake Discord: HTTP plumbing, the gateway, rate-limit buckets.

State and waits live in ``discord_world``, message bodies in ``discord_bodies``, routes in
``discord_rest``, user actions (messages, slash commands, presses) in ``discord_actions``; the
assembled class is ``tests.fakes.discord.FakeDiscord``.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import BodyPartReader, WSMsgType, web

from tests.fakes.discord_model import RecordedRequest, snowflake
from tests.fakes.discord_world import DiscordWorld

API_PREFIX = "/api/v10"
MESSAGE_CONTENT = 1 << 15
"""The privileged Message Content intent bit of IDENTIFY's ``intents``."""
Handler = Callable[..., Awaitable[web.Response]]


def json_response(
    data: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """A JSON answer whose Content-Type is exactly ``application/json`` (discord.py insists)."""
    return web.Response(
        body=json.dumps(data).encode(),
        status=status,
        headers={"Content-Type": "application/json", **(headers or {})},
    )


def error(status: int, code: int, message: str) -> web.Response:
    return json_response({"message": message, "code": code}, status)


@dataclass
class Req:
    """A parsed request: JSON body or multipart ``payload_json`` plus ``files[N]`` parts."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any
    files: dict[str, tuple[str, str, bytes]] = field(default_factory=dict)


@dataclass
class _Bucket:
    started: float = 0.0
    used: int = 0


@dataclass
class _Session:
    ws: web.WebSocketResponse
    seq: int = 0
    identified: bool = False
    closed: bool = False
    shard: tuple[int, int] = (0, 1)

    def receives(self, guild_id: int | None) -> bool:
        """Whether Discord sends this session a guild's events (a DM's: shard 0 only)."""
        shard, count = self.shard
        return shard == ((guild_id >> 22) % count if guild_id is not None else 0)


class FakeDiscordCore(DiscordWorld):
    """Server, gateway and rate limits. See :class:`tests.fakes.discord.FakeDiscord`."""

    def __init__(
        self,
        *,
        token: str = "fake-bot-token",
        bucket_size: int = 5,
        bucket_window: float = 5.0,
        advertise_rate_limits: bool = True,
        interaction_deadline: float = 3.0,
        attachment_size_limit: int = 10 * 1024 * 1024,
        message_content_intent: bool = True,
        identify_close_code: int | None = None,
        recommended_shards: int = 1,
    ) -> None:
        self.token = token
        self.recommended_shards = recommended_shards
        self.message_content_intent = message_content_intent
        self.identify_close_code = identify_close_code
        self.bucket_size = bucket_size
        self.bucket_window = bucket_window
        self.advertise_rate_limits = advertise_rate_limits
        self.interaction_deadline = interaction_deadline
        self.attachment_size_limit = attachment_size_limit

        super().__init__()
        self.rate_limit_hits = 0
        self.identifies: list[dict[str, Any]] = []
        self.resumes: list[dict[str, Any]] = []
        self._session_ids: set[str] = set()
        self.sessions: list[_Session] = []

        self._buckets: dict[int, _Bucket] = {}
        self._routes: list[tuple[str, re.Pattern[str], Handler, bool]] = []
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    # Lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get("/cdn/attachments/{cid}/{aid}/{filename}", self._cdn)
        app.router.add_route("*", "/{tail:.*}", self._dispatch_http)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}"

    async def wait_connected(self, count: int = 1, timeout: float = 5.0) -> None:
        """Wait until ``count`` gateway sessions are identified."""
        await self.wait_for(
            lambda: len([s for s in self.sessions if s.identified]) >= count,
            timeout,
            f"{count} gateway session(s)",
        )

    async def stop(self) -> None:
        for session in list(self.sessions):
            await session.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeDiscordCore:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def api_base(self) -> str:
        """What ``discord.http.Route.BASE`` must be."""
        return self.base_url + API_PREFIX

    @property
    def gateway_url(self) -> str:
        """What ``DiscordWebSocket.DEFAULT_GATEWAY`` must be."""
        return self.base_url.replace("http://", "ws://") + "/gateway"

    # Gateway -----------------------------------------------------------------------------------

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send a gateway dispatch (op 0) to every identified session of the shard the event's
        guild belongs to (a DM's: shard 0), as Discord does."""
        guild = int(data["guild_id"]) if data.get("guild_id") else None
        for session in [s for s in self.sessions if s.identified and not s.closed]:
            if session.receives(guild):
                await self._send(session, {"op": 0, "t": event, "d": data})

    async def _send(self, session: _Session, payload: dict[str, Any]) -> None:
        if payload["op"] == 0:
            session.seq += 1
            payload["s"] = session.seq
        else:
            payload.setdefault("s", None)
        payload.setdefault("t", None)
        try:
            await session.ws.send_str(json.dumps(payload))
        except ConnectionError:
            session.closed = True

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        session = _Session(ws)
        self.sessions.append(session)
        await self._send(session, {"op": 10, "d": {"heartbeat_interval": 41250}})
        try:
            async for frame in ws:
                if frame.type != WSMsgType.TEXT:
                    continue
                message = json.loads(frame.data)
                if message["op"] == 1:
                    await self._send(session, {"op": 11})
                elif message["op"] == 2:
                    await self._identify(session, message["d"])
                elif message["op"] == 6:
                    await self._resume(session, message["d"])
        finally:
            session.closed = True
            self.sessions.remove(session)
            self.changed()
        return ws

    async def _identify(self, session: _Session, data: dict[str, Any]) -> None:
        self.identifies.append(data)
        if data.get("token") != self.token:
            await session.ws.close(code=4004, message=b"Authentication failed.")
            return
        if not self.message_content_intent and int(data.get("intents", 0)) & MESSAGE_CONTENT:
            await session.ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        if self.identify_close_code is not None:
            await session.ws.close(code=self.identify_close_code, message=b"Refused.")
            return
        shard = data.get("shard") or [0, 1]
        session.shard = (int(shard[0]), int(shard[1]))
        session_id = f"session-{snowflake()}"
        self._session_ids.add(session_id)
        ready = {
            "v": 10,
            "user": self.bot.payload() | {"verified": True, "mfa_enabled": False},
            "guilds": (
                [{"id": str(self.guild_id), "unavailable": True}]
                if session.receives(self.guild_id)
                else []
            ),
            "session_id": session_id,
            "resume_gateway_url": self.gateway_url,
            "application": {"id": str(self.app_id), "flags": 0},
            "shard": list(session.shard),
            "private_channels": [],
            "relationships": [],
            "user_settings": {},
            "session_type": "normal",
            "geo_ordered_rtc_regions": [],
            "_trace": ["fake-discord"],
        }
        session.identified = True
        await self._send(session, {"op": 0, "t": "READY", "d": ready})
        if session.receives(self.guild_id):
            await self._send(session, {"op": 0, "t": "GUILD_CREATE", "d": self.guild_payload()})
        self.changed()

    async def _resume(self, session: _Session, data: dict[str, Any]) -> None:
        """RESUME a session this fake issued (nothing was missed: no replay); else op 9."""
        self.resumes.append(data)
        if data.get("token") != self.token or data.get("session_id") not in self._session_ids:
            await self._send(session, {"op": 9, "d": False})
            return
        session.identified = True
        session.seq = int(data.get("seq") or 0)
        await self._send(session, {"op": 0, "t": "RESUMED", "d": {}})
        self.changed()

    async def close_gateway(self, code: int) -> None:
        """Close every gateway session with ``code`` (4004: the token was reset meanwhile)."""
        for session in list(self.sessions):
            session.closed = True
            await session.ws.close(code=code, message=b"Closed by the fake.")

    # HTTP --------------------------------------------------------------------------------------

    def route(self, method: str, pattern: str, handler: Handler, *, auth: bool = True) -> None:
        """Serve ``method`` on API path ``pattern`` (regex with named groups)."""
        self._routes.append((method, re.compile(pattern), handler, auth))

    async def _cdn(self, request: web.Request) -> web.Response:
        attachment = self.attachments.get(int(request.match_info["aid"]))
        if attachment is None:
            return web.Response(status=404, text="Not Found")
        return web.Response(body=attachment.data, headers={"Content-Type": attachment.content_type})

    async def _dispatch_http(self, request: web.Request) -> web.Response:
        req = await self._parse(request)
        record = RecordedRequest(
            req.method,
            req.path,
            req.query,
            req.json,
            [(name, filename, data) for name, (filename, _, data) in req.files.items()],
            at=time.monotonic(),
        )
        self.requests.append(record)
        response = await self._answer(req)
        record.status = response.status
        self.changed()
        return response

    async def _answer(self, req: Req) -> web.Response:
        if not req.path.startswith("/"):
            return error(404, 0, "404: Not Found")
        for method, pattern, handler, auth in self._routes:
            match = pattern.fullmatch(req.path)
            if match is None or method != req.method:
                continue
            if auth and req.headers.get("Authorization") != f"Bot {self.token}":
                return error(401, 0, "401: Unauthorized")
            return await handler(req, **match.groupdict())
        return error(404, 0, f"404: Not Found ({req.method} {req.path})")

    async def _parse(self, request: web.Request) -> Req:
        path = request.path
        path = path[len(API_PREFIX) :] if path.startswith(API_PREFIX) else "!" + path
        req = Req(request.method, path, dict(request.query), dict(request.headers), None)
        if request.content_type == "application/json":
            req.json = json.loads(await request.read() or b"null")
        elif request.content_type == "multipart/form-data":
            reader = await request.multipart()
            async for part in reader:
                if not isinstance(part, BodyPartReader):
                    continue
                body = await part.read()
                name = part.name or ""
                if name == "payload_json":
                    req.json = json.loads(body)
                else:
                    content_type = part.headers.get("Content-Type", "application/octet-stream")
                    req.files[name] = (part.filename or name, content_type, bytes(body))
        return req

    # Rate limits -------------------------------------------------------------------------------

    def spend(self, channel_id: int) -> dict[str, str] | web.Response:
        """Take one request from ``channel_id``'s message bucket: headers to add, or a 429."""
        now = time.monotonic()
        bucket = self._buckets.setdefault(channel_id, _Bucket(now))
        if now - bucket.started >= self.bucket_window:
            bucket.started, bucket.used = now, 0
        reset_after = math.ceil(round((bucket.started + self.bucket_window - now) * 1000, 6)) / 1000
        headers = {
            "X-RateLimit-Limit": str(self.bucket_size),
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Bucket": f"channel-messages-{channel_id}",
        }
        if bucket.used >= self.bucket_size:
            self.rate_limit_hits += 1
            headers |= {
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Scope": "user",
                "Retry-After": str(math.ceil(reset_after)),
                "Via": "1.1 google",
            }
            body = {
                "message": "You are being rate limited.",
                "retry_after": reset_after,
                "global": False,
            }
            return json_response(body, 429, headers)
        bucket.used += 1
        headers["X-RateLimit-Remaining"] = str(self.bucket_size - bucket.used)
        return headers if self.advertise_rate_limits else {}
