"""The playground's HTTP side: who may use it (the rules are :mod:`adapters.web.access`), the
page and its assets, history, the event stream and served images. What users do (commands,
messages, buttons, forms, uploads) is in :mod:`adapters.web.handlers`.
"""

from __future__ import annotations

import json
import logging
import math
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from aiohttp import web

from adapters.listener import answer_and_close, refused
from adapters.web.access import (
    ACCESS_COOKIE,
    ACCESS_COOKIE_SECONDS,
    API_USER_ID,
    SESSION_COOKIE,
    Access,
    display_name,
    user_id_for,
)
from adapters.web.hub import TooManyStreams
from adapters.web.platform import dm_channel, is_dm_channel, web_place
from adapters.web.playground import NotKept, Playground
from adapters.web.translate import BadInput, catalogue, parse_channel
from bot.kernel import (
    N_,
    AdminConsole,
    EventRouter,
    InboundEvent,
    ResultGallery,
    SavedOptionChoices,
    User,
    _,
    offered,
)

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
STATIC_TYPES = {
    ".html": "text/html",
    ".css": "text/css",
    ".js": "text/javascript",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)
DEFAULT_CHANNELS = ("general", "art", "lab")
MULTIPART_OVERHEAD = 4096
UPLOAD_TIMEOUT = 300.0
"""Seconds an upload may take to arrive (ten images of ``[limits] max_upload_bytes``)."""
COOKIE_MAX_AGE = 365 * 24 * 3600
IDENTIFIED_PREFIXES = ("/api/", "/uploads/", "/downloads/")
"""Paths that act as a user (everything else is the page, its assets and posted images)."""
WRONG_HOST = N_(
    "This playground does not answer to that host name; the operator can add it to "
    "[web] allowed_hosts."
)
NO_TOKEN = N_(
    "This playground needs its access token: open it once as /?token=<token> "
    "(API clients send Authorization: Bearer <token>)."
)
WRONG_TOKEN = N_("That is not this playground's access token.")
NO_SESSION = N_("Load the playground page first: it gives this browser its identity.")
TOO_MANY_SESSIONS = N_(
    "Too many new playground identities were started from your address (at most {limit} an "
    "hour, [web] new_sessions_per_hour): try again in {minutes} min. A browser that keeps its "
    "cookies keeps its identity and is never refused."
)
WRONG_ADMIN_LINK = N_(
    "That is not this playground's admin link (a new one is printed at each start)."
)


class Serving(Protocol):
    """What the routes need of the adapter serving them
    (:class:`adapters.web.adapter.WebAdapter`)."""

    @property
    def playground(self) -> Playground: ...
    @property
    def access(self) -> Access: ...
    @property
    def router(self) -> EventRouter: ...
    @property
    def keepalive_seconds(self) -> float: ...
    @property
    def console(self) -> AdminConsole | None:
        """The admin page's core (None: no admin page)."""
        ...

    @property
    def gallery(self) -> ResultGallery | None:
        """The gallery's core (None: no gallery)."""
        ...

    def dispatch(self, event: InboundEvent, event_id: str) -> None:
        """Have the core handle ``event`` in the background (``event_id`` shows it working)."""
        ...

    def handling(self, event_id: str) -> bool:
        """Whether the core is handling the event ``event_id`` of this process now."""
        ...

    async def cancel_handlers(self) -> None: ...


ADAPTER: web.AppKey[Serving] = web.AppKey("genbot_web_adapter")
USER = web.RequestKey("genbot_user", User)
SET_COOKIES = web.RequestKey("genbot_set_cookies", dict)


def json_error(status: int, message: str, code: str | None = None) -> web.Response:
    """``{"error": message}`` (and ``"code"``, for the page to act on) with ``status``."""
    body = {"error": message} if code is None else {"error": message, "code": code}
    return web.json_response(body, status=status)


def _cross_site(request: web.Request) -> bool:
    if request.headers.get("Sec-Fetch-Site") == "cross-site":
        return True
    origin = request.headers.get("Origin")
    return origin is not None and urlsplit(origin).netloc != request.host


def _page_load(request: web.Request) -> bool:
    return request.method in ("GET", "HEAD") and request.path == "/"


def _token_refusal(request: web.Request, access: Access) -> web.StreamResponse | None:
    """None when the request presents the access token (or none is required)."""
    if not access.token_required:
        return None
    given = request.query.get("token")
    if given is not None and _page_load(request):
        if not access.token_matches(given):
            refused(request, "wrong access token")
            return json_error(401, _(WRONG_TOKEN))
        request[SET_COOKIES][ACCESS_COOKIE] = access.access_cookie()
        return web.Response(status=303, headers={"Location": "/"})
    cookie = request.cookies.get(ACCESS_COOKIE, "")
    if access.access_cookie_matches(cookie) or access.bearer_matches(
        request.headers.get("Authorization")
    ):
        return None
    refused(request, "no access token")
    return json_error(401, _(NO_TOKEN))


def _new_session_refusal(request: web.Request, access: Access) -> web.Response | None:
    """None when the request starts no identity (not a page load, or one with a valid session)
    or its client may start one (which is counted); else a 429 that says when to retry."""
    if not _page_load(request) or access.session_of(request.cookies.get(SESSION_COOKIE)):
        return None
    client = access.client_address(request.remote, request.headers.getall("X-Forwarded-For", []))
    wait = access.new_session_wait(client)
    if not wait:
        return None
    refused(request, "too many new sessions from one address")
    limit, minutes = access.new_sessions_per_hour, math.ceil(wait / 60)
    response = json_error(
        429, _(TOO_MANY_SESSIONS, limit=limit, minutes=minutes), "too_many_sessions"
    )
    response.headers["Retry-After"] = str(wait)
    return response


def _user(request: web.Request, access: Access) -> User | None:
    """Who sends ``request``; a page load without a session starts one; None: nobody."""
    session = access.session_of(request.cookies.get(SESSION_COOKIE))
    if session is None and _page_load(request):
        cookie = access.new_session()
        request[SET_COOKIES][SESSION_COOKIE] = cookie
        session = access.session_of(cookie)
    if session is not None:
        user_id = user_id_for(session)
    elif access.bearer_matches(request.headers.get("Authorization")):
        user_id = API_USER_ID
    else:
        return None
    return User(id=user_id, name=display_name(user_id), is_admin=access.is_admin(user_id))


def _admin_link(request: web.Request, access: Access, user: User) -> web.Response:
    """``/?admin=<token>``: the browser's user becomes an admin, and the token leaves the
    address bar."""
    if not access.admin_link_matches(request.query["admin"]):
        refused(request, "wrong admin link")
        return json_error(403, _(WRONG_ADMIN_LINK))
    access.make_admin(user.id)
    log.info("playground user %s opened the admin link and is an admin", user.id)
    return web.Response(status=303, headers={"Location": "/"})


@web.middleware
async def access_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """Apply the trust rules of :mod:`adapters.web.access`; turn :class:`BadInput` into a 400."""
    access = request.app[ADAPTER].access
    request[SET_COOKIES] = {}
    if not access.host_allowed(request.headers.get("Host")):
        refused(request, "Host not allowed")
        return json_error(421, _(WRONG_HOST))
    refusal = _token_refusal(request, access)
    if refusal is not None:
        return refusal
    refusal = _new_session_refusal(request, access)
    if refusal is not None:
        return refusal
    user = _user(request, access)
    if user is not None and "admin" in request.query and _page_load(request):
        return _admin_link(request, access, user)
    if user is not None:
        request[USER] = user
    elif request.path.startswith(IDENTIFIED_PREFIXES):
        refused(request, "no session")
        return json_error(401, _(NO_SESSION), "no_session")
    if request.method == "POST" and _cross_site(request):
        return json_error(403, _("Cross-site requests are refused by the playground."))
    try:
        response: web.StreamResponse = await handler(request)
    except BadInput as exc:
        return json_error(400, str(exc))
    except NotKept as exc:
        log.warning("refused a %s: %s", request.path, exc)
        return json_error(503, exc.user_text)
    return response


async def on_prepare(request: web.Request, response: web.StreamResponse) -> None:
    """Set the cookies the request earned and the security headers of every answer."""
    access = request.app[ADAPTER].access
    for name, value in request.get(SET_COOKIES, {}).items():
        cookie: SimpleCookie = SimpleCookie()
        cookie[name] = value
        morsel = cookie[name]
        morsel.update({"path": "/", "httponly": "true", "samesite": "Strict"})
        if access.secure_cookies:
            morsel["secure"] = True
        lifetime = ACCESS_COOKIE_SECONDS if name == ACCESS_COOKIE else COOKIE_MAX_AGE
        morsel["max-age"] = str(lifetime)
        response.headers.add("Set-Cookie", morsel.OutputString())
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)


def static_file(name: str) -> web.Response:
    """The playground's file ``name`` (404 for any other name)."""
    path = STATIC_DIR / name
    content_type = STATIC_TYPES.get(path.suffix)
    if "/" in name or name.startswith(".") or content_type is None or not path.is_file():
        return json_error(404, _("No such file: {name}", name=name))
    return web.Response(
        body=path.read_bytes(),
        content_type=content_type,
        charset="utf-8" if content_type.startswith("text/") else None,
        headers={"Cache-Control": "no-cache"},
    )


async def index(request: web.Request) -> web.Response:
    return static_file("index.html")


async def static(request: web.Request) -> web.Response:
    return static_file(request.match_info["name"])


async def commands(request: web.Request) -> web.Response:
    return web.json_response({"commands": catalogue(offered(request.app[ADAPTER].router))})


async def saved_options(request: web.Request) -> web.Response:
    """The names of this user's saved options in the channel (``/prefer``), which the option
    chips of an expanding command offer."""
    user = request[USER]
    channel = parse_channel(request.query.get("channel"), user.id)
    router = request.app[ADAPTER].router
    names: tuple[str, ...] = ()
    if isinstance(router, SavedOptionChoices):
        names = await router.saved_options(user, web_place(channel))
    return web.json_response({"names": list(names)})


async def history(request: web.Request) -> web.Response:
    """The channel's recent messages this user may see, with the event number they are at
    (a page about to follow the channel: see :meth:`Playground.watch`)."""
    playground = request.app[ADAPTER].playground
    user = request[USER]
    channel = parse_channel(request.query.get("channel"), user.id)
    await playground.watch(channel)
    known = [c for c in playground.channels() if c not in DEFAULT_CHANNELS and not is_dm_channel(c)]
    return web.json_response(
        {
            "channel": channel,
            "instance": playground.store.instance,
            "seq": playground.hub.last_seq(channel),
            "me": {"id": user.id, "name": user.name, "admin": user.is_admin},
            "dm": dm_channel(user.id),
            "channels": [*DEFAULT_CHANNELS, *known],
            "profile": {"max_text": playground.profile.max_text},
            "limits": {
                "max_upload_bytes": playground.max_upload_bytes,
                "max_document_bytes": playground.max_document_bytes,
            },
            "messages": [m.to_json() for m in playground.store.history(channel, user.id)],
        }
    )


def _sse(seq: int | None, payload: dict[str, Any]) -> bytes:
    head = f"id: {seq}\n" if seq is not None else ""
    return f"{head}data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


async def events(request: web.Request) -> web.StreamResponse:
    """Server-sent events of one channel; resumes after ``Last-Event-ID`` or ``?after=``. While
    one is open, the playground shows everything other processes save in the channel (see
    :meth:`Playground.watch`)."""
    adapter = request.app[ADAPTER]
    playground = adapter.playground
    channel = parse_channel(request.query.get("channel"), request[USER].id)
    raw_after = request.headers.get("Last-Event-ID") or request.query.get("after")
    try:
        after = int(raw_after) if raw_after else None
    except ValueError:
        raise BadInput(
            _("'after' must be an event number, not {given}.", given=repr(raw_after))
        ) from None
    user = request[USER]
    try:
        subscriber, replay = playground.hub.subscribe(channel, user.id, after)
    except TooManyStreams as error:
        refused(request, "too many event streams of one user")
        playground.unwatch(channel)
        return await answer_and_close(request, json_error(429, str(error)))
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        }
    )
    try:
        await playground.watch(channel)
        await response.prepare(request)
        hello = {
            "type": "hello",
            "channel": channel,
            "instance": playground.store.instance,
            "seq": playground.hub.last_seq(channel),
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
            for number, payload in batch:
                await response.write(_sse(number, payload))
    except ConnectionResetError:
        pass
    finally:
        playground.hub.unsubscribe(subscriber)
        playground.unwatch(channel)
    return response


async def image(request: web.Request) -> web.Response:
    """An image genbot posted, at its content-addressed URL."""
    stored = await request.app[ADAPTER].playground.image_file(request.match_info["key"])
    if stored is None:
        return json_error(404, _("No such image (it may have scrolled out of the playground)."))
    return web.Response(
        body=stored.data,
        content_type=stored.content_type,
        charset="utf-8" if stored.content_type.startswith("text/") else None,
        headers={
            "Cache-Control": "public, max-age=31536000, immutable",
            "Content-Disposition": f'inline; filename="{stored.filename}"',
        },
    )


async def upload_file(request: web.Request) -> web.Response:
    """A pending upload, for its owner's preview."""
    stored = request.app[ADAPTER].playground.uploads.get(request.match_info["id"], request[USER].id)
    if stored is None:
        return json_error(404, _("No such upload."))
    return web.Response(
        body=stored.data, content_type=stored.content_type, headers={"Cache-Control": "private"}
    )


async def download(request: web.Request) -> web.Response:
    """A file genbot handed its user (an export), for that user only, until it expires."""
    stored = request.app[ADAPTER].playground.downloads.get(
        request.match_info["id"], request[USER].id
    )
    if stored is None:
        return json_error(404, _("This download has expired or is not yours."))
    return web.Response(
        body=stored.data,
        content_type=stored.content_type,
        headers={
            "Cache-Control": "private, no-store",
            "Content-Disposition": f'attachment; filename="{stored.filename}"',
        },
    )


async def close_streams(app: web.Application) -> None:
    """End every browser's event stream (the server is shutting down)."""
    app[ADAPTER].playground.hub.close_all()


async def cancel_handlers(app: web.Application) -> None:
    """Cancel the core's work still running for this playground (the server is cleaning up)."""
    await app[ADAPTER].cancel_handlers()
