"""The playground's HTTP side: sessions, the page and its assets, history, the event stream and
served images. What users do (commands, messages, buttons, forms, uploads) is in
:mod:`adapters.web.actions`.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import secrets
from http.cookies import SimpleCookie
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from aiohttp import web

from adapters.listener import body_limit
from adapters.web.translate import BadInput, catalogue, parse_channel
from bot.events import User

if TYPE_CHECKING:
    from adapters.web.adapter import WebAdapter

STATIC_DIR = Path(__file__).parent / "static"
STATIC_TYPES = {
    ".html": "text/html",
    ".css": "text/css",
    ".js": "text/javascript",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
SESSION_COOKIE = "genbot_session"
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{32}$")
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)
DEFAULT_CHANNELS = ("general", "art", "lab")
MULTIPART_OVERHEAD = 4096
UPLOAD_TIMEOUT = 300.0
"""Seconds an upload may take to arrive (ten images of ``[limits] max_upload_bytes``)."""

ADAPTER: web.AppKey[WebAdapter] = web.AppKey("genbot_web_adapter")
USER = web.RequestKey("genbot_user", User)
NEW_SESSION = web.RequestKey("genbot_new_session", str)


def user_id_for(token: str) -> str:
    """The user id of a session: stable for the cookie, and not the cookie itself."""
    return "web-" + hashlib.sha256(token.encode()).hexdigest()[:12]


def json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _is_loopback(remote: str | None) -> bool:
    try:
        return remote is not None and ipaddress.ip_address(remote).is_loopback
    except ValueError:
        return False


def _cross_site(request: web.Request) -> bool:
    if request.headers.get("Sec-Fetch-Site") == "cross-site":
        return True
    origin = request.headers.get("Origin")
    return origin is not None and urlsplit(origin).netloc != request.host


@web.middleware
async def session_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """Give every browser a session (cookie) and a user; turn :class:`BadInput` into a 400."""
    token = request.cookies.get(SESSION_COOKIE, "")
    if not _TOKEN.match(token):
        token = secrets.token_urlsafe(24)
        request[NEW_SESSION] = token
    request[USER] = User(id=user_id_for(token), name="you", is_admin=_is_loopback(request.remote))
    if request.method == "POST" and _cross_site(request):
        return json_error(403, "Cross-site requests are refused by the playground.")
    try:
        response: web.StreamResponse = await handler(request)
    except BadInput as exc:
        return json_error(400, str(exc))
    return response


async def _on_prepare(request: web.Request, response: web.StreamResponse) -> None:
    token = request.get(NEW_SESSION)
    if token is not None:
        cookie: SimpleCookie = SimpleCookie()
        cookie[SESSION_COOKIE] = token
        morsel = cookie[SESSION_COOKIE]
        morsel.update({"path": "/", "httponly": "true", "samesite": "Strict"})
        morsel["max-age"] = str(365 * 24 * 3600)
        response.headers.add("Set-Cookie", morsel.OutputString())
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)


def _static_file(name: str) -> web.Response:
    path = STATIC_DIR / name
    content_type = STATIC_TYPES.get(path.suffix)
    if "/" in name or name.startswith(".") or content_type is None or not path.is_file():
        return json_error(404, f"No such file: {name}")
    return web.Response(
        body=path.read_bytes(),
        content_type=content_type,
        charset="utf-8" if content_type.startswith("text/") else None,
        headers={"Cache-Control": "no-cache"},
    )


async def index(request: web.Request) -> web.Response:
    return _static_file("index.html")


async def static(request: web.Request) -> web.Response:
    return _static_file(request.match_info["name"])


async def commands(request: web.Request) -> web.Response:
    return web.json_response({"commands": catalogue()})


async def history(request: web.Request) -> web.Response:
    """The channel's recent messages this user may see, with the event number they are at."""
    adapter = request.app[ADAPTER]
    channel = parse_channel(request.query.get("channel"))
    user = request[USER]
    known = [c for c in adapter.store.channels() if c not in DEFAULT_CHANNELS]
    return web.json_response(
        {
            "channel": channel,
            "instance": adapter.store.instance,
            "seq": adapter.hub.last_seq(channel),
            "me": {"id": user.id, "name": user.name},
            "channels": [*DEFAULT_CHANNELS, *known],
            "limits": {
                "max_text": adapter.limits.max_text,
                "max_upload_bytes": adapter.max_upload_bytes,
            },
            "messages": [m.to_json() for m in adapter.store.history(channel, user.id)],
        }
    )


def _sse(seq: int | None, payload: dict[str, Any]) -> bytes:
    head = f"id: {seq}\n" if seq is not None else ""
    return f"{head}data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


async def events(request: web.Request) -> web.StreamResponse:
    """Server-sent events of one channel; resumes after ``Last-Event-ID`` or ``?after=``."""
    adapter = request.app[ADAPTER]
    channel = parse_channel(request.query.get("channel"))
    raw_after = request.headers.get("Last-Event-ID") or request.query.get("after")
    try:
        after = int(raw_after) if raw_after else None
    except ValueError:
        raise BadInput(f"'after' must be an event number, not {raw_after!r}.") from None
    user = request[USER]
    subscriber, replay = adapter.hub.subscribe(channel, user.id, after)
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        }
    )
    try:
        await response.prepare(request)
        hello = {
            "type": "hello",
            "channel": channel,
            "instance": adapter.store.instance,
            "seq": adapter.hub.last_seq(channel),
        }
        await response.write(b"retry: 1000\n\n" + _sse(None, hello))
        if replay is None:
            await response.write(_sse(None, {"type": "reset", "channel": channel}))
        for seq, payload in replay or ():
            await response.write(_sse(seq, payload))
        while not subscriber.closed:
            batch = await subscriber.next_batch(adapter.keepalive_seconds)
            if request.transport is None or request.transport.is_closing():
                break
            if not batch:
                await response.write(b": keep-alive\n\n")
            for seq, payload in batch:
                await response.write(_sse(seq, payload))
    except ConnectionResetError:
        pass
    finally:
        adapter.hub.unsubscribe(subscriber)
    return response


async def image(request: web.Request) -> web.Response:
    """An image genbot posted, at its content-addressed URL."""
    stored = request.app[ADAPTER].store.image(request.match_info["key"])
    if stored is None:
        return json_error(404, "No such image (it may have scrolled out of the playground).")
    return web.Response(
        body=stored.data,
        content_type=stored.content_type,
        headers={
            "Cache-Control": "public, max-age=31536000, immutable",
            "Content-Disposition": f'inline; filename="{stored.filename}"',
        },
    )


async def upload_file(request: web.Request) -> web.Response:
    """A pending upload, for its owner's preview."""
    stored = request.app[ADAPTER].store.upload(request.match_info["id"], request[USER].id)
    if stored is None:
        return json_error(404, "No such upload.")
    return web.Response(
        body=stored.data, content_type=stored.content_type, headers={"Cache-Control": "private"}
    )


async def _close_streams(app: web.Application) -> None:
    app[ADAPTER].hub.close_all()


async def _cancel_handlers(app: web.Application) -> None:
    await app[ADAPTER].cancel_handlers()


def _upload_route(max_upload_bytes: int) -> Any:
    from adapters.web import actions

    limit = actions.MAX_FILES_PER_REQUEST * (max_upload_bytes + MULTIPART_OVERHEAD)

    @body_limit(limit, timeout=UPLOAD_TIMEOUT)
    async def upload(request: web.Request) -> web.StreamResponse:
        return await actions.upload(request)

    return upload


def build_app(adapter: WebAdapter) -> web.Application:
    """The aiohttp application of ``adapter``'s playground."""
    from adapters.web import actions

    app = web.Application(middlewares=[session_middleware])
    app[ADAPTER] = adapter
    app.on_response_prepare.append(_on_prepare)
    app.on_shutdown.append(_close_streams)
    app.on_cleanup.append(_cancel_handlers)
    app.router.add_get("/", index)
    app.router.add_get("/static/{name}", static)
    app.router.add_get("/api/commands", commands)
    app.router.add_get("/api/history", history)
    app.router.add_get("/api/events", events)
    app.router.add_post("/api/command", actions.command)
    app.router.add_post("/api/message", actions.message)
    app.router.add_post("/api/button", actions.button)
    app.router.add_post("/api/modal", actions.modal)
    app.router.add_post("/api/upload", _upload_route(adapter.max_upload_bytes))
    app.router.add_get("/images/{key}/{name}", image)
    app.router.add_get("/uploads/{id}/{name}", upload_file)
    return app
